package e2e

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// driftSetup runs two 1.5-cpu pods on one node of the single-type pool and returns the claim names.
func driftSetup(t *testing.T, s *stack, ctx context.Context, np *v1.NodePool) map[string]bool {
	t.Helper()
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	d := deployment("app", 2, "1500m", "1Gi")
	s.create(ctx, d)
	s.waitRunning(ctx, 2, d.Spec.Template.Labels)
	old := map[string]bool{}
	for _, nc := range s.claims() {
		old[nc.Name] = true
		if nc.Annotations[v1.NodePoolHashAnnotationKey] != np.Hash() || nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
			t.Fatalf("nodeclaim %s carries hash %q/%q, want %q/%q", nc.Name, nc.Annotations[v1.NodePoolHashAnnotationKey],
				nc.Annotations[v1.NodePoolHashVersionAnnotationKey], np.Hash(), v1.NodePoolHashVersion)
		}
	}
	return old
}

// waitReplaced waits until none of old is left, the replacements satisfy ok, and the pods run.
func (s *stack) waitReplaced(ctx context.Context, old map[string]bool, ok func(v1.NodeClaim) bool) {
	s.t.Helper()
	s.eventually(ctx, "drifted nodes replaced", func(context.Context) (bool, error) {
		cs := s.claims()
		if len(cs) == 0 {
			return false, nil
		}
		for _, nc := range cs {
			if old[nc.Name] || !nc.IsTrue(v1.ConditionTypeInitialized) || !ok(nc) {
				return false, nil
			}
		}
		return true, nil
	}, s.describeClaims)
	s.waitRunning(ctx, 2, map[string]string{"app": "app"})
}

func TestDriftAfterNodePoolTemplateEdit(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	np := singleTypePool()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // drift is not consolidation
	old := driftSetup(t, s, ctx, np)
	cur := &v1.NodePool{}
	if err := s.kube.Get(ctx, client.ObjectKeyFromObject(np), cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Template.Labels = map[string]string{"team": "checkout"}
	if err := s.kube.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	var drifted v1.NodeClaim
	s.eventually(ctx, "the node marked Drifted (NodePoolDrifted)", func(context.Context) (bool, error) {
		for _, nc := range s.claims() {
			if c := nc.GetCondition(v1.ConditionTypeDrifted); c != nil && c.Reason == v1.DriftReasonNodePoolDrifted {
				drifted = nc
				return true, nil
			}
		}
		return false, nil
	}, s.describeClaims)
	s.waitReplaced(ctx, old, func(nc v1.NodeClaim) bool { return nc.Labels["team"] == "checkout" })
	s.waitEvent(ctx, &drifted, "DisruptionTerminating", "Drifted: replacing 1 node(s) by 1")
}

func TestDriftAfterNodeClassImageChange(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	np := singleTypePool()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	old := driftSetup(t, s, ctx, np)
	class := &kwokv1alpha1.KWOKNodeClass{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: "default"}, class); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ImageID = "kwok-image-v2"
	if err := s.kube.Patch(ctx, class, patch); err != nil {
		t.Fatal(err)
	}
	s.waitReplaced(ctx, old, func(nc v1.NodeClaim) bool { return nc.Status.ImageID == "kwok-image-v2" })
}

func TestExpiredNodeIsReplaced(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	np := singleTypePool()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("40s")
	old := driftSetup(t, s, ctx, np)
	var expiredClaim v1.NodeClaim
	for _, nc := range s.claims() {
		expiredClaim = nc
	}
	s.waitReplaced(ctx, old, func(v1.NodeClaim) bool { return true })
	s.waitEvent(ctx, &expiredClaim, "Expired", "expired after 40s")
}

func TestExpireAfterNeverKeepsNodes(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(3 * time.Minute)
	np := singleTypePool()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("Never")
	old := driftSetup(t, s, ctx, np)
	s.holdsFor(15*time.Second, "the node kept", func() bool {
		cs := s.claims()
		return len(cs) == len(old) && old[cs[0].Name] && cs[0].DeletionTimestamp.IsZero()
	})
}
