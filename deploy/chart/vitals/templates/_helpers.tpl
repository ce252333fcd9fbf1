{{/* Name of the operator's objects. */}}
{{- define "vitals.operator.name" -}}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Image of the operator. */}}
{{- define "vitals.image" -}}
{{- $image := .Values.image | default dict -}}
{{- printf "%s:%s" ($image.repository | default "vitalsproject/vitals") ($image.tag | default .Chart.AppVersion | default "latest") -}}
{{- end -}}

{{/* Labels of the operator's objects. */}}
{{- define "vitals.operator.labels" -}}
app.kubernetes.io/name: vitals
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vitals.operator.selector" -}}
app.kubernetes.io/name: vitals
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}
