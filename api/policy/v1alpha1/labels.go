package v1alpha1

// Labels and annotations Joist's admission webhooks read or write.
const (
	// OptOutLabelKey set to OptOutLabelValue on a namespace or a pod keeps the pod webhooks away from it.
	OptOutLabelKey   = "policy.joist.dev/guardrails"
	OptOutLabelValue = "disabled"
	// MutationsAnnotationKey records on a pod what the pod webhook changed and which Guardrail asked.
	MutationsAnnotationKey = "policy.joist.dev/mutations"
)
