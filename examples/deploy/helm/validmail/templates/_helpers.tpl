{{/* The name of the release's objects. */}}
{{- define "validmail.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the service's pods. */}}
{{- define "validmail.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: validmaild
{{- end -}}

{{/* Every object's labels. */}}
{{- define "validmail.labels" -}}
{{ include "validmail.selectorLabels" . }}
{{ include "validmail.commonLabels" . }}
{{- end -}}

{{/* The labels that name the release, not the component. */}}
{{- define "validmail.commonLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "validmail.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "validmail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "validmail.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/* The Secret holding the store URL. */}}
{{- define "validmail.storeSecret" -}}
{{- if .Values.store.existingSecret -}}
{{ .Values.store.existingSecret }}
{{- else if .Values.store.url -}}
{{ include "validmail.fullname" . }}-store
{{- else -}}
{{ fail "set store.existingSecret (a Secret holding VALIDMAIL_STORE) or store.url" }}
{{- end -}}
{{- end -}}

{{/* /tmp's size limit: the list spools' worst case and some room. */}}
{{- define "validmail.tmpSize" -}}
{{- $readers := ternary 2 1 (.Values.config.dashboard | default false) -}}
{{- printf "%dMi" (add (mul (int .Values.lists.uploads) $readers 256) (int .Values.lists.tmpHeadroomMiB)) -}}
{{- end -}}

{{/* The store URL's variable, from its Secret. */}}
{{- define "validmail.storeEnv" -}}
- name: VALIDMAIL_STORE
  valueFrom:
    secretKeyRef:
      name: {{ include "validmail.storeSecret" . }}
      key: {{ .Values.store.secretKey }}
{{- end -}}
