{{/* The chart name, or nameOverride. */}}
{{- define "lance-adapter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of every resource: fullnameOverride, or release-chart. */}}
{{- define "lance-adapter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lance-adapter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lance-adapter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lance-adapter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "lance-adapter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "lance-adapter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lance-adapter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the auth tokens file (key `tokens`). */}}
{{- define "lance-adapter.authSecret" -}}
{{- default (printf "%s-auth" (include "lance-adapter.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{/* The Secret holding credential properties as LANCE_ADAPTER_PROP_* variables. */}}
{{- define "lance-adapter.credentialsSecret" -}}
{{- default (printf "%s-credentials" (include "lance-adapter.fullname" .)) .Values.credentials.existingSecret }}
{{- end }}

{{- define "lance-adapter.usesCredentials" -}}
{{- if or .Values.credentials.existingSecret .Values.credentials.properties .Values.credentials.catalogs }}true{{ end }}
{{- end }}

{{/* True when there is a tokens file to mount: listed tokens or an existing Secret. */}}
{{- define "lance-adapter.hasTokens" -}}
{{- if and (ne .Values.auth.mode "off") (or .Values.auth.tokens .Values.auth.existingSecret) }}true{{ end }}
{{- end }}

{{/* Whether the release sets grants (auth.access, auth.accessGroups or auth.accessDefault). */}}
{{- define "lance-adapter.hasGrants" -}}
{{- if and (ne .Values.auth.mode "off") (or .Values.auth.access .Values.auth.accessGroups .Values.auth.accessDefault) }}true{{ end }}
{{- end }}
