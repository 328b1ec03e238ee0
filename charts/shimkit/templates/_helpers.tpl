{{/* The name of every object: one operator per cluster, so no release prefix. */}}
{{- define "shimkit.fullname" -}}
{{- default "shimkit-operator" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "shimkit.name" -}}
{{- default "shimkit-operator" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "shimkit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shimkit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "shimkit.labels" -}}
{{ include "shimkit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: shimkit
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "shimkit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "shimkit.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end }}

{{/* An image reference: repository:tag, and @digest when one pins it. */}}
{{- define "shimkit.image" -}}
{{- printf "%s:%s" .image.repository (default .appVersion .image.tag) -}}
{{- with .image.digest }}{{ printf "@%s" . }}{{ end -}}
{{- end }}

{{- define "shimkit.operatorImage" -}}
{{- include "shimkit.image" (dict "image" .Values.image "appVersion" .Chart.AppVersion) -}}
{{- end }}

{{- define "shimkit.installerImage" -}}
{{- include "shimkit.image" (dict "image" .Values.installer.image "appVersion" .Chart.AppVersion) -}}
{{- end }}

{{/* The operator's flags, in the order of operator/config/manager. */}}
{{- define "shimkit.args" -}}
{{- if .Values.leaderElection.enabled }}
- --leader-elect
{{- end }}
{{- if .Values.metrics.enabled }}
- {{ printf "--metrics-bind-address=:%v" .Values.metrics.port | quote }}
{{- else }}
- --metrics-bind-address=0
{{- end }}
- {{ printf "--health-probe-bind-address=:%v" .Values.healthProbe.port | quote }}
{{- with .Values.pprof.bindAddress }}
- {{ printf "--pprof-bind-address=%v" . | quote }}
{{- end }}
{{- if .Values.checkPhases }}
- --check-phases
{{- end }}
{{- with .Values.installer.image.pullPolicy }}
- {{ printf "--installer-pull-policy=%v" . | quote }}
{{- end }}
{{- if .Values.installer.hostPID }}
- --installer-host-pid
{{- end }}
{{- with .Values.installer.jobTTL }}
- {{ printf "--job-ttl=%v" . | quote }}
{{- end }}
{{- with .Values.installer.failedJobTTL }}
- {{ printf "--failed-job-ttl=%v" . | quote }}
{{- end }}
{{- with .Values.installer.jobDeadline }}
- {{ printf "--job-deadline=%v" . | quote }}
{{- end }}
{{- with .Values.installer.verifyPeriod }}
- {{ printf "--verify-period=%v" . | quote }}
{{- end }}
{{- with .Values.installer.bundleRoot }}
- {{ printf "--bundle-root=%v" . | quote }}
{{- end }}
{{- with .Values.installer.linkDir }}
- {{ printf "--link-dir=%v" . | quote }}
{{- end }}
{{- with .Values.containerd.preset }}
- {{ printf "--containerd-preset=%v" . | quote }}
{{- end }}
{{- with .Values.containerd.configMode }}
- {{ printf "--containerd-config-mode=%v" . | quote }}
{{- end }}
{{- with .Values.containerd.restartTimeout }}
- {{ printf "--containerd-restart-timeout=%v" . | quote }}
{{- end }}
{{- with .Values.containerd.maxRestartingNodes }}
- {{ printf "--max-restarting-nodes=%v" . | quote }}
{{- end }}
{{- with .Values.containerd.batchWindow }}
- {{ printf "--batch-window=%v" . | quote }}
{{- end }}
{{- with .Values.memoryLimit }}
- {{ printf "--memory-limit=%v" . | quote }}
{{- end }}
{{- if ne (toString .Values.kubeAPI.qps) "" }}
- {{ printf "--kube-api-qps=%v" .Values.kubeAPI.qps | quote }}
{{- end }}
{{- if ne (toString .Values.kubeAPI.burst) "" }}
- {{ printf "--kube-api-burst=%v" .Values.kubeAPI.burst | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
