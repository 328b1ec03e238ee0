{{- /*
  crd-ref-docs's main template for hack/docgen: instead of Markdown it
  writes the types it read (their docs, fields and markers) as JSON, which
  api.go lays out as the API reference page.
*/ -}}
{{- define "gvList" -}}
[{{ range $i, $gv := . }}{{ if $i }},{{ end }}
{"groupVersion": {{ toJson $gv.GroupVersionString }}, "doc": {{ toJson $gv.Doc }}, "types": [
{{- range $j, $t := $gv.SortedTypes }}{{ if $j }},{{ end }}
 {"name": {{ toJson $t.Name }}, "doc": {{ toJson $t.Doc }},
  "alias": {{ if $t.IsAlias }}{{ toJson (markdownRenderTypeLink $t.UnderlyingType) }}{{ else }}""{{ end }},
  "gvk": {{ toJson $t.GVK }}, "markers": {{ toJson $t.Markers }},
  "enum": [{{ range $k, $e := $t.EnumValues }}{{ if $k }},{{ end }}{"name": {{ toJson $e.Name }}, "doc": {{ toJson $e.Doc }}}{{ end }}],
  "fields": [{{ range $k, $f := $t.Members }}{{ if $k }},{{ end }}
   {"name": {{ toJson $f.Name }}, "type": {{ toJson (markdownRenderType $f.Type) }}, "doc": {{ toJson $f.Doc }}, "markers": {{ toJson $f.Markers }}}
  {{- end }}]}
{{- end }}]}
{{- end }}]
{{ end -}}
