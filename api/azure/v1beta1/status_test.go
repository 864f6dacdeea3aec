package v1beta1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
)

func TestReadyRollsUpEveryCondition(t *testing.T) {
	nc := &azv1beta1.AKSNodeClass{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	parts := []string{azv1beta1.ConditionTypeImagesReady, azv1beta1.ConditionTypeKubernetesVersionReady, azv1beta1.ConditionTypeSubnetsReady,
		azv1beta1.ConditionTypeValidationSucceeded, azv1beta1.ConditionTypeLocalDNSReady}
	for i, p := range parts {
		nc.SetCondition(p, metav1.ConditionTrue, "Resolved", "")
		ready := nc.GetCondition(azv1beta1.ConditionTypeReady)
		if want := i == len(parts)-1; (ready.Status == metav1.ConditionTrue) != want {
			t.Fatalf("after %d of %d parts Ready = %s (%s)", i+1, len(parts), ready.Status, ready.Message)
		}
	}
	nc.SetCondition(azv1beta1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "SubnetNotFound", "subnet x does not exist")
	ready := nc.GetCondition(azv1beta1.ConditionTypeReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != "SubnetNotFound" || ready.Message != "SubnetsReady: subnet x does not exist" || ready.ObservedGeneration != 3 {
		t.Fatalf("Ready = %+v, want False naming SubnetsReady", ready)
	}
}

func TestHash(t *testing.T) {
	nc := &azv1beta1.AKSNodeClass{}
	nc.Spec.ImageFamily = ptr("Ubuntu")
	h := nc.Hash()
	nc.Spec.Tags = map[string]string{"team": "a"}
	if nc.Hash() != h {
		t.Error("tags changed the hash; they are updated in place, not drift")
	}
	nc.Spec.OSDiskSizeGB = ptr[int32](64)
	if nc.Hash() == h {
		t.Error("osDiskSizeGB did not change the hash")
	}
	nc2 := nc.DeepCopy()
	if nc2.Hash() != nc.Hash() {
		t.Error("hash is not stable")
	}
}

func ptr[T any](v T) *T { return &v }
