package cachedobjects

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// ClaimChangedOnlyIn reports whether claims a and b (two versions of one claim, read only) differ
// in nothing but the status conditions of the given types and lastPodEventTime, besides the
// resource version and managed fields every write changes. The nodeclaim lifecycle asks it of an
// update (nothing it reads changed), the disruption status writer of a patch's answer (nothing but
// its own write changed).
func ClaimChangedOnlyIn(a, b *v1.NodeClaim, conditions map[string]bool) bool {
	am, bm := a.ObjectMeta, b.ObjectMeta // shallow copies: only read
	am.ResourceVersion, bm.ResourceVersion, am.ManagedFields, bm.ManagedFields = "", "", nil, nil
	if !equality.Semantic.DeepEqual(am, bm) || !equality.Semantic.DeepEqual(a.Spec, b.Spec) {
		return false
	}
	as, bs := a.Status, b.Status
	as.Conditions, bs.Conditions, as.LastPodEventTime, bs.LastPodEventTime = nil, nil, metav1.Time{}, metav1.Time{}
	return equality.Semantic.DeepEqual(as, bs) && sameConditionsBesides(a.Status.Conditions, b.Status.Conditions, conditions)
}

// sameConditionsBesides reports whether a and b hold the same conditions, in order, once those of
// the skipped types are left out.
func sameConditionsBesides(a, b []metav1.Condition, skipped map[string]bool) bool {
	i, j := 0, 0
	for {
		for i < len(a) && skipped[a[i].Type] {
			i++
		}
		for j < len(b) && skipped[b[j].Type] {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if !equality.Semantic.DeepEqual(a[i], b[j]) {
			return false
		}
		i, j = i+1, j+1
	}
}
