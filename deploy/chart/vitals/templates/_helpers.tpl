{{/* The app's name: the label app.kubernetes.io/name ("vitals"; nameOverride). */}}
{{- define "vitals.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: fullnameOverride, else the release's name (with nameOverride:
     <release>-<nameOverride>, unless the release's name holds it already). The operator's objects are
     <fullname>-operator, the agent's <fullname>-agent. */}}
{{- define "vitals.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 54 | trimSuffix "-" -}}
{{- else if and .Values.nameOverride (not (contains .Values.nameOverride .Release.Name)) -}}
{{- printf "%s-%s" .Release.Name .Values.nameOverride | trunc 54 | trimSuffix "-" -}}
{{- else -}}
{{- .Release.Name | trunc 54 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Name of the operator's objects. */}}
{{- define "vitals.operator.name" -}}
{{- printf "%s-operator" (include "vitals.fullname" .) -}}
{{- end -}}

{{/* An image reference: (list $image $defaultRepository $defaultTag $registry): repository@digest when a
     digest is given, else repository:tag; with a registry (a mirror's host[:port][/path]),
     <registry>/<repository>. */}}
{{- define "vitals.imageRef" -}}
{{- $image := index . 0 | default dict -}}
{{- $repo := $image.repository | default (index . 1) -}}
{{- $registry := "" -}}
{{- if gt (len .) 3 }}{{ $registry = index . 3 | default "" | trimSuffix "/" }}{{ end -}}
{{- if $registry }}{{ $repo = printf "%s/%s" $registry $repo }}{{ end -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $repo $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($image.tag | default (index . 2)) -}}
{{- end -}}
{{- end -}}

{{/* The registry of an image: (list $ $image): the image's registry, else image.registry (the operator's),
     else global.imageRegistry (an umbrella chart's), else none. */}}
{{- define "vitals.imageRegistry" -}}
{{- $ := index . 0 -}}
{{- $image := index . 1 | default dict -}}
{{- $image.registry | default ($.Values.image | default dict).registry | default ($.Values.global | default dict).imageRegistry | default "" -}}
{{- end -}}

{{/* Image of the operator. */}}
{{- define "vitals.image" -}}
{{- include "vitals.imageRef" (list .Values.image "vitalsproject/vitals" (.Chart.AppVersion | default "latest") (include "vitals.imageRegistry" (list . .Values.image))) -}}
{{- end -}}

{{/* The operator's ServiceAccount: serviceAccount.name, else <fullname>-operator (created unless
     serviceAccount.create is false). */}}
{{- define "vitals.operator.serviceAccountName" -}}
{{- (.Values.serviceAccount | default dict).name | default (include "vitals.operator.name" .) -}}
{{- end -}}

{{/* Labels every object of the chart carries (commonLabels added). */}}
{{- define "vitals.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of objects of no component (the alert rules, the dashboard). */}}
{{- define "vitals.labels" -}}
app.kubernetes.io/name: {{ include "vitals.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "vitals.commonLabels" . }}
{{- end -}}

{{/* Labels of the operator's objects. */}}
{{- define "vitals.operator.labels" -}}
{{ include "vitals.operator.selector" . }}
{{ include "vitals.commonLabels" . }}
{{- end -}}

{{/* The operator's selector: never changes across upgrades (a Deployment's selector is immutable). */}}
{{- define "vitals.operator.selector" -}}
app.kubernetes.io/name: {{ include "vitals.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* imagePullSecrets of the pods: global.imagePullSecrets (an umbrella chart's) and imagePullSecrets,
     each {name: ...} or a name. */}}
{{- define "vitals.imagePullSecrets" -}}
{{- $secrets := concat ((.Values.global | default dict).imagePullSecrets | default list) (.Values.imagePullSecrets | default list) -}}
{{- if $secrets -}}
imagePullSecrets:
{{- range $secrets }}
  - name: {{ if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}
{{- end -}}
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

{{/* The agent's selector: never changes across upgrades (a DaemonSet's selector is immutable). */}}
{{- define "vitals.agent.selector" -}}
app.kubernetes.io/name: {{ include "vitals.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{/* Labels of the agent's objects. */}}
{{- define "vitals.agent.labels" -}}
{{ include "vitals.agent.selector" . }}
{{ include "vitals.commonLabels" . }}
{{- end -}}

{{/* Name of the agent's objects. */}}
{{- define "vitals.agent.name" -}}
{{- printf "%s-agent" (include "vitals.fullname" .) -}}
{{- end -}}

{{/* Whether the cluster serves a Prometheus Operator kind ("true" or ""): (list $ "ServiceMonitor"). helm
     template asks no cluster: give --api-versions monitoring.coreos.com/v1 there. */}}
{{- define "vitals.hasMonitoringKind" -}}
{{- $ := index . 0 -}}
{{- if $.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" (index . 1)) }}true{{ end -}}
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
