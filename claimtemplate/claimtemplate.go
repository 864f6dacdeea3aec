// Package claimtemplate builds the NodeClaim that launches a solver plan from its NodePool's
// template. It is pure: the provisioner and the disruption loop (replacements) call it, so both launch
// the same claims.
package claimtemplate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
	"github.com/joist-dev/joist/solver"
)

// NodeClaim builds the NodeClaim that launches a plan from its pool's template, as the provisioner
// and the disruption loop's replacements do. Its labels, which the node
// gets, are the template labels and a value for each key only the pool's requirements define
// (requirementLabels).
func NodeClaim(np *v1.NodePool, plan *solver.NodeClaimPlan, known requirements.KnownKeys) *v1.NodeClaim {
	tmpl := np.Spec.Template
	labels := requirementLabels(plan.Requirements, known)
	labels[v1.NodePoolLabelKey] = np.Name
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	reqs := []v1.NodeSelectorRequirementWithMinValues{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Name}}}
	for _, r := range plan.Requirements {
		if r.Key == v1.NodePoolLabelKey || r.Key == v1.LabelHostname {
			continue
		}
		reqs = append(reqs, r)
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  withNodePoolHash(copyMap(tmpl.Annotations), np),
			Finalizers:   []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.GroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           reqs,
			Resources:              v1.ResourceRequirements{Requests: plan.Requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
		},
	}
}

// withNodePoolHash stamps the pool's template hash, against which drift is judged.
func withNodePoolHash(m map[string]string, np *v1.NodePool) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[v1.NodePoolHashAnnotationKey] = np.Hash()
	m[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	return m
}

// requirementLabels are the labels a NodeClaim takes from its requirements, as Karpenter's do: for
// each key no instance type defines (known) and outside the restricted kubernetes.io, k8s.io and
// karpenter.sh domains, the value requirements.Sample settles on, if the requirements demand the
// label (In, Exists, Gt, Lt, Gte, Lte). Without it a pod selecting the pool's own label is planned
// onto a node the kube-scheduler then finds without it.
func requirementLabels(reqs []v1.NodeSelectorRequirementWithMinValues, known requirements.KnownKeys) map[string]string {
	labels := map[string]string{}
	set, err := requirements.FromAPI(reqs)
	if err != nil {
		return labels // the solver wrote them; they parse
	}
	for _, kr := range set {
		if known[kr.Key] || restrictedLabel(kr.Key) {
			continue
		}
		if v, ok := kr.Sample(); ok {
			labels[kr.Key] = v
		}
	}
	return labels
}

// restrictedLabel reports whether key lies in a domain whose labels only the kubelet, the cloud
// provider or Karpenter itself set (Karpenter's restricted label domains and their exceptions).
func restrictedLabel(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, allowed := range []string{"node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io"} {
		if domain == allowed || strings.HasSuffix(domain, "."+allowed) {
			return false
		}
	}
	for _, restricted := range []string{"kubernetes.io", "k8s.io", "karpenter.sh"} {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return true
		}
	}
	return false
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ForPlan is NodeClaim with the label keys instance types define read from the plan's options: a key
// only other types of the catalog define cannot be demanded by requirements these options satisfy.
func ForPlan(np *v1.NodePool, plan *solver.NodeClaimPlan) *v1.NodeClaim {
	return NodeClaim(np, plan, requirements.Known(plan.InstanceTypeOptions))
}
