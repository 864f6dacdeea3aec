package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/kwok"
)

// karpenterFixture reads testdata/karpenter-adoption.yaml: NodePools, and the NodeClaims and Nodes
// Karpenter v1.15 made for them, generated with Karpenter's own types and functions by
// bench/upstream/karpenteradoption (whose test keeps the file current).
func karpenterFixture(t *testing.T) (pools []*v1.NodePool, claims []*v1.NodeClaim, nodes []*corev1.Node) {
	t.Helper()
	raw, err := os.ReadFile("testdata/karpenter-adoption.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch meta.Kind {
		case "NodePool":
			np := &v1.NodePool{}
			pools, obj = append(pools, np), np
		case "NodeClaim":
			nc := &v1.NodeClaim{}
			claims, obj = append(claims, nc), nc
		case "Node":
			n := &corev1.Node{}
			nodes, obj = append(nodes, n), n
		default:
			continue
		}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			t.Fatal(err)
		}
	}
	if len(pools) != 2 || len(claims) != 3 || len(nodes) != 3 {
		t.Fatalf("fixture: %d pools, %d claims, %d nodes; want 2, 3, 3", len(pools), len(claims), len(nodes))
	}
	return pools, claims, nodes
}

// installKarpenterLeftovers creates what a Karpenter install left behind, with the status Karpenter
// wrote, before any Joist runs: the KWOK cloud then holds the Nodes as its running instances.
func (s *stack) installKarpenterLeftovers(ctx context.Context, pools []*v1.NodePool, claims []*v1.NodeClaim, nodes []*corev1.Node) {
	s.t.Helper()
	uids := map[string]types.UID{}
	for _, np := range pools {
		s.create(ctx, np)
		uids[np.Name] = np.UID
	}
	for _, n := range nodes {
		st := n.Status
		s.create(ctx, n)
		base := n.DeepCopy()
		n.Status = st
		if err := s.kube.Status().Patch(ctx, n, client.MergeFrom(base)); err != nil {
			s.t.Fatalf("node %s status: %v", n.Name, err)
		}
	}
	for _, nc := range claims {
		st := nc.Status
		nc.OwnerReferences[0].UID = uids[nc.Labels[v1.NodePoolLabelKey]]
		s.create(ctx, nc)
		base := nc.DeepCopy()
		nc.Status = st
		if err := s.kube.Status().Patch(ctx, nc, client.MergeFrom(base)); err != nil {
			s.t.Fatalf("nodeclaim %s status: %v", nc.Name, err)
		}
	}
}

// metricFamilies scrapes the running manager's metrics; before it starts there are none.
func (s *stack) metricFamilies() map[string]*dto.MetricFamily {
	s.t.Helper()
	if s.manager == nil {
		return nil
	}
	// The endpoint comes up with the manager: retry until it answers.
	var families map[string]*dto.MetricFamily
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		families, err = s.manager.Metrics(ctx)
		return err == nil, s.manager.Err()
	})
	if err != nil {
		s.t.Fatalf("scraping the manager's metrics: %v", err)
	}
	return families
}

// disruptionPasses is the number of disruption passes that evaluated, read from the _count of
// karpenter_voluntary_disruption_decision_evaluation_duration_seconds.
func (s *stack) disruptionPasses() uint64 {
	s.t.Helper()
	var n uint64
	if f := s.metricFamilies()["karpenter_voluntary_disruption_decision_evaluation_duration_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

// counterSum sums the counter family name over the series whose labels include match (an empty value
// matches any).
func (s *stack) counterSum(name string, match map[string]string) float64 {
	s.t.Helper()
	f := s.metricFamilies()[name]
	if f == nil {
		return 0
	}
	var sum float64
series:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if v != "" && have[k] != v {
				continue series
			}
		}
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// TestAdoptsKarpentersNodeClaims starts Joist on a cluster Karpenter v1.15 ran: its NodePools,
// NodeClaims (hash annotations v3, karpenter.sh/termination finalizers, Launched/Registered/
// Initialized/Ready) and Nodes, with pods on them. Over at least three disruption passes nothing is
// drifted, disrupted, tainted, relabelled or launched; then consolidation removes a node the pods no
// longer need through Joist's termination (which clears Karpenter's finalizer), and expiry removes the
// claim whose expireAfter (from Karpenter's template) comes due.
func TestAdoptsKarpentersNodeClaims(t *testing.T) {
	s := newStack(t, kwok.Options{})
	s.fastDisruption()
	ctx := s.ctx(12 * time.Minute)
	pools, claims, nodes := karpenterFixture(t)
	s.create(ctx, kwokNodeClass(0))
	s.installKarpenterLeftovers(ctx, pools, claims, nodes)

	// The workload Karpenter placed: one 2.5-cpu pod per node of pool default (3.92 cpu allocatable).
	app := deployment("app", 2, "2500m", "1Gi", func(ps *corev1.PodSpec) {
		ps.NodeSelector = map[string]string{v1.NodePoolLabelKey: "default"}
	})
	s.create(ctx, app)
	s.waitRunning(ctx, 2, app.Spec.Template.Labels)

	before := map[string]*corev1.Node{}
	for _, n := range nodes {
		got := &corev1.Node{}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(n), got); err != nil {
			t.Fatal(err)
		}
		before[n.Name] = got
	}
	disrupted := func(pool, reason string) float64 {
		return s.counterSum("karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": pool, "reason": reason})
	}
	disruptedBefore := disrupted("default", "") + disrupted("shortlife", "")
	passes := s.disruptionPasses()
	s.startManager()
	s.eventually(ctx, "five disruption passes", func(context.Context) (bool, error) {
		return s.disruptionPasses() >= passes+5, nil
	}, func() string { return fmt.Sprintf("%d passes", s.disruptionPasses()-passes) })
	t.Logf("%d disruption passes ran over the adopted cluster", s.disruptionPasses()-passes)

	// Nothing moved.
	got := s.claims()
	if len(got) != 3 {
		t.Fatalf("after adoption %d nodeclaims, want Karpenter's 3\n%s", len(got), s.describeClaims())
	}
	for i := range got {
		nc := &got[i]
		if !nc.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s is being deleted", nc.Name)
		}
		for _, c := range []string{v1.ConditionTypeDrifted, v1.ConditionTypeDisrupting} {
			if nc.IsTrue(c) {
				t.Errorf("nodeclaim %s is %s: %s", nc.Name, c, nc.GetCondition(c).Message)
			}
		}
		if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != "v3" {
			t.Errorf("nodeclaim %s hash version %q, want Karpenter's v3", nc.Name, nc.Annotations[v1.NodePoolHashVersionAnnotationKey])
		}
		for _, reason := range []string{"DisruptionLaunching", "DisruptionTerminating", "DisruptionBlocked", "Expired"} {
			if evs := s.eventsFor(ctx, nc, reason); len(evs) > 0 {
				t.Errorf("nodeclaim %s got a %s event: %s", nc.Name, reason, evs[0].Note)
			}
		}
	}
	for _, np := range pools {
		live := &v1.NodePool{}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(np), live); err != nil {
			t.Fatal(err)
		}
		if live.Annotations[v1.NodePoolHashAnnotationKey] != np.Annotations[v1.NodePoolHashAnnotationKey] {
			t.Errorf("nodepool %s hash %s, Karpenter's %s", np.Name, live.Annotations[v1.NodePoolHashAnnotationKey], np.Annotations[v1.NodePoolHashAnnotationKey])
		}
	}
	for name, was := range before {
		now := &corev1.Node{}
		if err := s.kube.Get(ctx, client.ObjectKey{Name: name}, now); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(was.Labels, now.Labels) {
			t.Errorf("node %s relabelled: %v → %v", name, was.Labels, now.Labels)
		}
		if len(now.Spec.Taints) > 0 || now.Spec.Unschedulable {
			t.Errorf("node %s tainted or cordoned: %v unschedulable=%v", name, now.Spec.Taints, now.Spec.Unschedulable)
		}
		if !now.DeletionTimestamp.IsZero() {
			t.Errorf("node %s is being deleted", name)
		}
	}
	if d := disrupted("default", "") + disrupted("shortlife", "") - disruptedBefore; d != 0 {
		t.Errorf("karpenter_nodeclaims_disrupted_total rose by %v while nothing changed", d)
	}
	if t.Failed() {
		t.FailNow()
	}
	emptyBefore, expiredBefore := disrupted("default", "empty")+disrupted("default", "underutilized"), disrupted("shortlife", "expired")

	// Consolidation: one pod goes, its node is removed by Joist's termination.
	s.scale(ctx, app, 1)
	s.eventually(ctx, "one node of pool default consolidated away", func(context.Context) (bool, error) {
		n := 0
		for _, nc := range s.claims() {
			if nc.Labels[v1.NodePoolLabelKey] == "default" {
				n++
			}
		}
		return n == 1, nil
	}, s.describeClaims)
	var removed *v1.NodeClaim
	for _, nc := range claims {
		if nc.Labels[v1.NodePoolLabelKey] != "default" {
			continue
		}
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(nc), &v1.NodeClaim{})
		if apierrors.IsNotFound(err) {
			removed = nc
		}
	}
	if removed == nil {
		t.Fatal("no claim of pool default is gone")
	}
	s.eventually(ctx, "the consolidated node (Karpenter's finalizer on it) gone", func(ctx context.Context) (bool, error) {
		err := s.kube.Get(ctx, client.ObjectKey{Name: removed.Status.NodeName}, &corev1.Node{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, s.describeClaims)
	if len(s.eventsFor(ctx, removed, "DisruptionTerminating")) == 0 {
		t.Errorf("no DisruptionTerminating event on consolidated nodeclaim %s", removed.Name)
	}
	s.waitRunning(ctx, 1, app.Spec.Template.Labels)
	if d := disrupted("default", "empty") + disrupted("default", "underutilized") - emptyBefore; d != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{nodepool=default,reason=empty|underutilized} rose by %v, want 1", d)
	}

	// Expiry: the shortlife claim goes once its expireAfter has passed since its creation.
	short := claims[2]
	if err := s.kube.Get(ctx, client.ObjectKeyFromObject(short), short); err != nil {
		t.Fatal(err)
	}
	created := short.CreationTimestamp.Time
	wait := time.Until(created.Add(4 * time.Minute))
	t.Logf("waiting %s for nodeclaim %s to expire", wait.Round(time.Second), short.Name)
	s.eventually(ctx, "the shortlife claim expired and gone", func(ctx context.Context) (bool, error) {
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(short), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, s.describeClaims)
	if time.Since(created) < 4*time.Minute {
		t.Errorf("nodeclaim %s went after %s, before its expireAfter of 4m", short.Name, time.Since(created))
	}
	if len(s.eventsFor(ctx, short, "Expired")) == 0 {
		t.Errorf("no Expired event on nodeclaim %s", short.Name)
	}
	if d := disrupted("shortlife", "expired") - expiredBefore; d != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{nodepool=shortlife,reason=expired} rose by %v, want 1", d)
	}
}
