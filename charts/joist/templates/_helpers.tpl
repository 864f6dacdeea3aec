{{/* The chart's name. */}}
{{- define "joist.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name, prefixed by the chart's unless it contains it. */}}
{{- define "joist.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "joist.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "joist.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The manager pods' selector labels. */}}
{{- define "joist.selectorLabels" -}}
app.kubernetes.io/name: {{ include "joist.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Annotations of every object. */}}
{{- define "joist.annotations" -}}
{{- with .Values.additionalAnnotations }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the manager runs as. */}}
{{- define "joist.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "joist.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Service the apiserver calls the webhooks through, and the Secret of its certificate. */}}
{{- define "joist.webhookService" -}}
{{- printf "%s-webhook" (include "joist.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "joist.webhookSecret" -}}
{{- printf "%s-webhook-cert" (include "joist.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The manager image: the digest wins over the tag; the tag defaults to v<appVersion>. */}}
{{- define "joist.image" -}}
{{- $img := .Values.controller.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default (printf "v%s" .Chart.AppVersion) $img.tag) }}
{{- end }}
{{- end }}

{{/* The rules of a Role or ClusterRole of config/ (files/rbac.yaml, generated from the markers). */}}
{{- define "joist.rules" -}}
{{- $all := .root.Files.Get "files/rbac.yaml" | fromYaml }}
{{- $rules := index $all .role }}
{{- if not $rules }}{{ fail (printf "files/rbac.yaml has no rules of %s: run make manifests" .role) }}{{ end }}
{{- toYaml $rules }}
{{- end }}

{{/*
A pod affinity or anti-affinity term list, with the pod's selector labels as the labelSelector of a
term that has none (as Karpenter's chart does).
*/}}
{{- define "joist.withSelector" -}}
{{- $out := list }}
{{- range .terms }}
{{- $t := deepCopy . }}
{{- $inner := $t }}
{{- if hasKey $t "podAffinityTerm" }}{{ $inner = $t.podAffinityTerm }}{{ end }}
{{- if not (hasKey $inner "labelSelector") }}
{{- $_ := set $inner "labelSelector" (dict "matchLabels" (include "joist.selectorLabels" $.root | fromYaml)) }}
{{- end }}
{{- $out = append $out $t }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
The webhook client configuration: the webhook Service and the path of config/webhook's webhook, and
the self-signed CA when cert-manager does not inject one.
*/}}
{{- define "joist.clientConfig" -}}
service:
  name: {{ include "joist.webhookService" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .webhook.clientConfig.service.path }}
  port: 443
{{- with .caBundle }}
caBundle: {{ . }}
{{- end }}
{{- end }}

{{/*
A webhook of files/webhooks.yaml (generated from config/webhook) for this release: its Service, CA
bundle, and the release namespace in place of the "system" placeholder of its namespaceSelector.
*/}}
{{- define "joist.webhook" -}}
{{- $w := deepCopy .webhook }}
{{- $_ := set $w "clientConfig" (include "joist.clientConfig" . | fromYaml) }}
{{- if $w.namespaceSelector }}
{{- $exprs := list }}
{{- range $w.namespaceSelector.matchExpressions }}
{{- $e := deepCopy . }}
{{- if eq $e.key "kubernetes.io/metadata.name" }}
{{- $values := list }}
{{- range $e.values }}
{{- $values = append $values (ternary $.root.Release.Namespace . (eq . "system")) }}
{{- end }}
{{- $_ := set $e "values" $values }}
{{- end }}
{{- $exprs = append $exprs $e }}
{{- end }}
{{- $_ := set $w.namespaceSelector "matchExpressions" $exprs }}
{{- end }}
{{- toYaml (list $w) }}
{{- end }}
