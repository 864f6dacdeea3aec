package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestEmptyNodesAreRemovedAfterConsolidateAfter(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(2 * time.Minute)
	np := kwokNodePool("general", nil)
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("2s")
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	keep := deployment("keep", 2, "500m", "512Mi", nodeSelector(v1.LabelArch, "arm64"))
	gone := deployment("gone", 4, "2", "4Gi", nodeSelector(v1.LabelArch, "amd64"))
	s.create(ctx, keep, gone)
	s.waitRunning(ctx, 2, keep.Spec.Template.Labels)
	s.waitRunning(ctx, 4, gone.Spec.Template.Labels)
	before := len(s.claims())
	scaled := &appsv1.Deployment{}
	if err := s.kube.Get(ctx, client.ObjectKeyFromObject(gone), scaled); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(scaled.DeepCopy())
	scaled.Spec.Replicas = ptr.To[int32](0)
	if err := s.kube.Patch(ctx, scaled, patch); err != nil {
		t.Fatal(err)
	}
	s.eventually(ctx, "the amd64 node to be removed once empty", func(context.Context) (bool, error) {
		for _, nc := range s.claims() {
			if nc.Labels[v1.LabelArch] == "amd64" {
				return false, nil
			}
		}
		return true, nil
	}, s.describeClaims)
	if after := len(s.claims()); after != before-1 {
		t.Errorf("%d nodeclaims after the scale-down, want %d (only the empty amd64 node removed)\n%s", after, before-1, s.describeClaims())
	}
	s.waitRunning(ctx, 2, keep.Spec.Template.Labels)
}
