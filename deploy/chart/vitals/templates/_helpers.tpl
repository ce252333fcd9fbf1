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

{{/* A value that may be 0 or false: (list $map "key" $default) gives $map.key when it is set (also to 0,
     false or ""), else the default. "default" would turn a 0 into the default. */}}
{{- define "vitals.value" -}}
{{- $m := index . 0 | default dict -}}
{{- $k := index . 1 -}}
{{- if and (hasKey $m $k) (not (kindIs "invalid" (index $m $k))) -}}
{{- index $m $k -}}
{{- else -}}
{{- index . 2 -}}
{{- end -}}
{{- end -}}

{{/* Labels of the agent's objects. */}}
{{- define "vitals.agent.selector" -}}
app.kubernetes.io/name: vitals
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{/* Name of the agent's objects. */}}
{{- define "vitals.agent.name" -}}
{{- printf "%s-agent" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Whether the agent is enabled ("true" or ""). */}}
{{- define "vitals.agent.enabled" -}}
{{- if eq (toString (.Values.agent | default dict).enabled) "true" }}true{{ end -}}
{{- end -}}

{{/* Seconds of a duration made of hours, minutes and seconds ("2h", "1h30m", "90s"), for PromQL
     comparisons with time(). values.schema.json allows only that form. */}}
{{- define "vitals.durationSeconds" -}}
{{- $total := 0 -}}
{{- range regexFindAll "[0-9]+[hms]" . -1 -}}
{{- $n := regexFind "[0-9]+" . | atoi -}}
{{- $unit := ternary 3600 (ternary 60 1 (hasSuffix "m" .)) (hasSuffix "h" .) -}}
{{- $total = add $total (mul $n $unit) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* Name of the pod network canary's DaemonSet and headless Service. */}}
{{- define "vitals.canary.name" -}}
{{- printf "%s-agent-canary" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Whether the agent discovers its peers through the canaries ("true" or ""). */}}
{{- define "vitals.canary.enabled" -}}
{{- $agent := .Values.agent | default dict -}}
{{- $peers := ($agent.connectivity | default dict).peers | default dict -}}
{{- if and (eq (toString $agent.enabled) "true") (eq (toString $peers.enabled) "true") }}true{{ end -}}
{{- end -}}
