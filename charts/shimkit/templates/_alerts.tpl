{{/*
The operator's alert rules: the groups of the PrometheusRule (prometheusrule.yaml).
hack/charttest/alerts_test.go renders them and runs promtool's unit tests
on them (the test cases are written there); operator/dashboard_internal_test.go
checks that every shimkit_* metric named here is one the operator exports.
*/}}

{{/*
shimkit.alerts.increase: how much a counter grew within a window, per series
(the operator pod's): its value minus its value a window ago, or its whole
value for a series newer than the window. increase() would miss the first
increment of each series: the operator creates a series at 1, on the first
event of its labels.
*/}}
{{- define "shimkit.alerts.increase" -}}
({{ .metric }} - {{ .metric }} offset {{ .window }}) or ({{ .metric }} unless {{ .metric }} offset {{ .window }})
{{- end }}

{{- define "shimkit.alerts.labels" -}}
severity: {{ .severity | quote }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "shimkit.alertGroups" -}}
{{- $r := .Values.metrics.prometheusRule -}}
- name: shimkit
  rules:
    - alert: ShimkitShimDegraded
      expr: max by (shim) (shimkit_shim_condition{type="Degraded",status="True"}) == 1
      for: {{ $r.degraded.for }}
      labels:
        {{- include "shimkit.alerts.labels" (dict "severity" $r.degraded.severity "extra" $r.alertLabels) | nindent 8 }}
      annotations:
        summary: {{ "Shim {{ $labels.shim }} is Degraded" | quote }}
        description: {{ printf "The Shim {{ $labels.shim }} has been Degraded for %s: a node's installer failed, the workload gate tripped, or the spec is refused; its rollout is halted. kubectl describe shim {{ $labels.shim }} names the reason and the failing nodes." $r.degraded.for | quote }}
    - alert: ShimkitRolloutStalled
      expr: |-
        (
          (max by (shim) (shimkit_shim_nodes{state="updated"}) < max by (shim) (shimkit_shim_nodes{state="matching"}))
          or
          (max by (shim) (shimkit_shim_nodes{state="in_progress"}) > 0)
        )
        unless on (shim) (max by (shim) (changes(shimkit_shim_nodes{state="updated"}[{{ $r.rolloutStalled.for }}])) > 0)
        unless on (shim) (max by (shim) (shimkit_rollout_paused) == 1)
        and on (shim) (count by (shim) (shimkit_shim_nodes{state="updated"} offset {{ $r.rolloutStalled.for }}))
      for: 5m
      labels:
        {{- include "shimkit.alerts.labels" (dict "severity" $r.rolloutStalled.severity "extra" $r.alertLabels) | nindent 8 }}
      annotations:
        summary: {{ "The rollout of Shim {{ $labels.shim }} is stalled" | quote }}
        description: {{ printf "The rollout of the Shim {{ $labels.shim }} has updated no node for %s and is not done (nodes are left to update, or an installer Job runs) though it is not paused. Look at kubectl describe shim {{ $labels.shim }} (a maintenance window or a bake can hold it; a node may be cordoned, unschedulable or its Job stuck) and at the installer Jobs." $r.rolloutStalled.for | quote }}
    - alert: ShimkitDriftRepeating
      expr: |-
        sum by (shim, node) (
          {{ include "shimkit.alerts.increase" (dict "metric" "shimkit_drift_detected_total" "window" $r.driftRepeating.window) }}
        ) >= {{ $r.driftRepeating.threshold }}
      labels:
        {{- include "shimkit.alerts.labels" (dict "severity" $r.driftRepeating.severity "extra" $r.alertLabels) | nindent 8 }}
      annotations:
        summary: {{ "Shim {{ $labels.shim }} keeps drifting on node {{ $labels.node }}" | quote }}
        description: {{ printf "Drift of the Shim {{ $labels.shim }} was found {{ $value }} times within %s on node {{ $labels.node }}, although the operator repaired it each time: something on the node (configuration management, an image rebuild, another installer) keeps changing containerd's config or the shim's files. Find it; the node's Drifted events say what changed." $r.driftRepeating.window | quote }}
    - alert: ShimkitWorkloadGateTripped
      expr: |-
        sum by (shim, reason) (
          {{ include "shimkit.alerts.increase" (dict "metric" "shimkit_workload_gate_trips_total" "window" $r.workloadGateTripped.window) }}
        ) > 0
      labels:
        {{- include "shimkit.alerts.labels" (dict "severity" $r.workloadGateTripped.severity "extra" $r.alertLabels) | nindent 8 }}
      annotations:
        summary: {{ "The workload gate halted the rollout of Shim {{ $labels.shim }} ({{ $labels.reason }})" | quote }}
        description: {{ printf "Workload pods of the Shim {{ $labels.shim }}'s RuntimeClasses failed on updated nodes ({{ $labels.reason }}) within %s, and the rollout halted. kubectl describe shim {{ $labels.shim }} names the pods and nodes; fix the shim or its spec (a new spec resumes the rollout), or revert it." $r.workloadGateTripped.window | quote }}
{{- end }}
