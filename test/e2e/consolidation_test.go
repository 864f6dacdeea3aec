package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// fastDisruption polls every second and validates commands after two.
func (s *stack) fastDisruption() {
	s.args = append(s.args, "--disruption-poll-interval=1s", "--consolidation-validation-delay=2s")
}

// singleTypePool allows only on-demand m-4x amd64 nodes (3.92 cpu allocatable): with 1.5-cpu pods a
// node holds two, so the tests know exactly how nodes fill.
func singleTypePool(mutate ...func(*v1.NodePool)) *v1.NodePool {
	np := kwokNodePool("general", nil,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m-4x-amd64-linux"}},
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	for _, m := range mutate {
		m(np)
	}
	return np
}

func (s *stack) scale(ctx context.Context, d *appsv1.Deployment, replicas int32) {
	s.t.Helper()
	cur := &appsv1.Deployment{}
	if err := s.kube.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		s.t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Replicas = ptr.To(replicas)
	if err := s.kube.Patch(ctx, cur, patch); err != nil {
		s.t.Fatal(err)
	}
}

// twoHalfNodes builds two nodes of the single-type pool that each run one 1.5-cpu pod (of
// deployments a and b): together they fit one node. podAnnotations go on both pod templates.
func twoHalfNodes(t *testing.T, s *stack, ctx context.Context, np *v1.NodePool, podAnnotations map[string]string) (a, b *appsv1.Deployment) {
	t.Helper()
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	a = deployment("a", 2, "1500m", "1Gi")
	a.Spec.Template.Annotations = podAnnotations
	s.create(ctx, a)
	s.waitRunning(ctx, 2, a.Spec.Template.Labels)
	b = deployment("b", 2, "1500m", "1Gi")
	b.Spec.Template.Annotations = podAnnotations
	s.create(ctx, b)
	s.waitRunning(ctx, 2, b.Spec.Template.Labels)
	if n := len(s.claims()); n != 2 {
		t.Fatalf("setup: %d nodeclaims, want 2\n%s", n, s.describeClaims())
	}
	s.scale(ctx, a, 1)
	s.scale(ctx, b, 1)
	s.waitRunning(ctx, 1, a.Spec.Template.Labels)
	s.waitRunning(ctx, 1, b.Spec.Template.Labels)
	return a, b
}

func (s *stack) waitClaims(ctx context.Context, want int) {
	s.t.Helper()
	s.eventually(ctx, fmt.Sprintf("%d nodeclaims", want), func(context.Context) (bool, error) {
		return len(s.claims()) == want, nil
	}, s.describeClaims)
}

// holdsFor fails the test if cond turns false within d.
func (s *stack) holdsFor(d time.Duration, what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			s.t.Fatalf("%s stopped holding\n%s", what, s.describeClaims())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (s *stack) totalCost() float64 {
	sum := 0.0
	for _, nc := range s.claims() {
		sum += priceOf(catalog.Default(), nc)
	}
	return sum
}

func TestConsolidationUnderutilizedTwoToOne(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	a, b := twoHalfNodes(t, s, ctx, singleTypePool(), nil)
	before := s.totalCost()
	s.waitClaims(ctx, 1)
	s.waitRunning(ctx, 1, a.Spec.Template.Labels)
	s.waitRunning(ctx, 1, b.Spec.Template.Labels)
	if after := s.totalCost(); after >= before {
		t.Fatalf("cost %.4f -> %.4f $/h: consolidation must save", before, after)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	ev := s.waitEvent(ctx, np, "DisruptionLaunching", "Underutilized: deleting 1 node(s), saves $")
	t.Logf("event: %s", ev.Note)
}

func TestConsolidationReplacesWithCheaperNode(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	np := kwokNodePool("general", nil, v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1s")
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	d := deployment("shrink", 6, "2", "4Gi", nodeSelector(v1.LabelArch, "amd64"))
	s.create(ctx, d)
	s.waitRunning(ctx, 6, d.Spec.Template.Labels)
	if n := len(s.claims()); n != 1 {
		t.Fatalf("setup: %d nodeclaims, want one big node\n%s", n, s.describeClaims())
	}
	big := s.claims()[0]
	bigPrice := priceOf(catalog.Default(), big)
	s.scale(ctx, d, 1)
	s.eventually(ctx, "the big node replaced by a cheaper one", func(context.Context) (bool, error) {
		cs := s.claims()
		return len(cs) == 1 && cs[0].Name != big.Name && cs[0].DeletionTimestamp.IsZero(), nil
	}, s.describeClaims)
	s.waitRunning(ctx, 1, d.Spec.Template.Labels)
	if p := priceOf(catalog.Default(), s.claims()[0]); p >= bigPrice {
		t.Fatalf("replacement costs %.4f $/h, the replaced node %.4f", p, bigPrice)
	}
}

func TestConsolidationRepacksHalfEmptyNodesToPlannedCount(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(5 * time.Minute)
	np := singleTypePool()
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	// Ten nodes of two 1.5-cpu pods each (one of each deployment), then half the pods go: ten
	// half-empty nodes whose ten pods fit on five.
	a := deployment("a", 10, "1500m", "1Gi")
	b := deployment("b", 10, "1500m", "1Gi")
	s.create(ctx, a, b)
	s.waitRunning(ctx, 10, a.Spec.Template.Labels)
	s.waitRunning(ctx, 10, b.Spec.Template.Labels)
	if n := len(s.claims()); n != 10 {
		t.Fatalf("setup: %d nodeclaims, want 10\n%s", n, s.describeClaims())
	}
	s.scale(ctx, b, 0)
	s.waitClaims(ctx, 5)
	s.waitRunning(ctx, 10, a.Spec.Template.Labels)
	s.holdsFor(5*time.Second, "5 nodeclaims", func() bool { return len(s.claims()) == 5 })
}

func TestConsolidationBudgetOfOneDisruptsOneNodeAtATime(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(5 * time.Minute)
	np := singleTypePool(func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}} })
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	a := deployment("a", 6, "1500m", "1Gi")
	b := deployment("b", 6, "1500m", "1Gi")
	s.create(ctx, a, b)
	s.waitRunning(ctx, 6, a.Spec.Template.Labels)
	s.waitRunning(ctx, 6, b.Spec.Template.Labels)
	s.scale(ctx, b, 0)
	maxDisrupting := 0
	s.eventually(ctx, "3 nodeclaims", func(context.Context) (bool, error) {
		cs := s.claims()
		disrupting := 0
		for _, nc := range cs {
			if !nc.DeletionTimestamp.IsZero() || nc.IsTrue(v1.ConditionTypeDisrupting) {
				disrupting++
			}
		}
		maxDisrupting = max(maxDisrupting, disrupting)
		return len(cs) == 3, nil
	}, s.describeClaims)
	if maxDisrupting != 1 {
		t.Fatalf("saw %d nodes disrupted at once, budget allows 1", maxDisrupting)
	}
	s.waitRunning(ctx, 6, a.Spec.Template.Labels)
}

// TestConsolidationIsBlocked: nothing may consolidate the two half-empty nodes, over many loops.
func TestConsolidationIsBlocked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pool  func(*v1.NodePool)
		pods  func(*corev1.PodSpec)
		after func(t *testing.T, s *stack, ctx context.Context)
		event string
	}{
		{name: "WhenEmpty", pool: func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty }},
		{name: "cron window forbids", pool: func(np *v1.NodePool) {
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: ptr.To("* * * * *"), Duration: &metav1.Duration{Duration: time.Hour}}}
		}},
		{name: "do-not-disrupt on both nodes", after: func(t *testing.T, s *stack, ctx context.Context) {
			for i, nc := range s.claims() {
				var obj client.Object = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
				if i == 1 {
					obj = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
				}
				annotate(t, s, ctx, obj, "true")
			}
		}, event: "has karpenter.sh/do-not-disrupt"},
		{name: "do-not-disrupt pods with unexpired duration", after: func(t *testing.T, s *stack, ctx context.Context) {
			pods := &corev1.PodList{}
			if err := s.kube.List(ctx, pods, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			for i := range pods.Items {
				if pods.Items[i].DeletionTimestamp.IsZero() {
					annotate(t, s, ctx, &pods.Items[i], "1h")
				}
			}
		}, event: "has karpenter.sh/do-not-disrupt"},
		{name: "PDB maxUnavailable 0", after: func(t *testing.T, s *stack, ctx context.Context) {
			for _, app := range []string{"a", "b"} {
				s.create(ctx, &policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
					Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 0},
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
				})
			}
		}, event: "allows no eviction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, kwokOptions())
			s.fastDisruption()
			ctx := s.ctx(4 * time.Minute)
			np := singleTypePool()
			if tc.pool != nil {
				tc.pool(np)
			}
			// Protections go on before the pods shrink, so there is never a moment without them.
			np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("5s")
			s.create(ctx, kwokNodeClass(0), np)
			s.startManager()
			a := deployment("a", 2, "1500m", "1Gi")
			s.create(ctx, a)
			s.waitRunning(ctx, 2, a.Spec.Template.Labels)
			b := deployment("b", 2, "1500m", "1Gi")
			s.create(ctx, b)
			s.waitRunning(ctx, 2, b.Spec.Template.Labels)
			s.scale(ctx, a, 1)
			s.scale(ctx, b, 1)
			s.waitRunning(ctx, 1, a.Spec.Template.Labels)
			s.waitRunning(ctx, 1, b.Spec.Template.Labels)
			if tc.after != nil {
				tc.after(t, s, ctx)
			}
			s.holdsFor(20*time.Second, "both nodes kept", func() bool {
				cs := s.claims()
				if len(cs) != 2 {
					return false
				}
				for _, nc := range cs {
					if !nc.DeletionTimestamp.IsZero() || nc.IsTrue(v1.ConditionTypeDisrupting) {
						return false
					}
				}
				return true
			})
			if tc.event != "" {
				nc := s.claims()[0]
				s.waitEvent(ctx, &nc, "DisruptionBlocked", tc.event)
			}
		})
	}
}

func annotate(t *testing.T, s *stack, ctx context.Context, obj client.Object, value string) {
	t.Helper()
	if err := s.kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1.DoNotDisruptAnnotationKey] = value
	obj.SetAnnotations(a)
	if err := s.kube.Patch(ctx, obj, patch); err != nil {
		t.Fatalf("annotating %s: %v", obj.GetName(), err)
	}
}

// TestDoNotDisruptExpiredDurationDoesNotProtect: a pod whose do-not-disrupt duration ran out no
// longer holds its node.
func TestDoNotDisruptExpiredDurationDoesNotProtect(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(4 * time.Minute)
	// Every pod is protected for one second after its creation: long over when the nodes shrink.
	a, b := twoHalfNodes(t, s, ctx, singleTypePool(), map[string]string{v1.DoNotDisruptAnnotationKey: "1s"})
	s.waitClaims(ctx, 1)
	s.waitRunning(ctx, 1, a.Spec.Template.Labels)
	s.waitRunning(ctx, 1, b.Spec.Template.Labels)
}

// TestConsolidationAbortsWhenAPodArrives: a pod bound to a node after the command was planned (and
// before it runs) abandons the command: the node is untainted and stays.
func TestConsolidationAbortsWhenAPodArrives(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	s.args = append(s.args, "--consolidation-validation-delay=15s")
	ctx := s.ctx(4 * time.Minute)
	// The arrival restarts the node's consolidateAfter; at 30 s the node cannot be a candidate again
	// (a fresh command taking it with the arrived pod, as Karpenter would) before the abort is seen.
	twoHalfNodes(t, s, ctx, singleTypePool(func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("30s")
	}), nil)
	var victim v1.NodeClaim
	s.eventually(ctx, "a node marked Disrupting", func(context.Context) (bool, error) {
		for _, nc := range s.claims() {
			if nc.IsTrue(v1.ConditionTypeDisrupting) {
				victim = nc
				return true, nil
			}
		}
		return false, nil
	}, s.describeClaims)
	arrival := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late-arrival", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      victim.Status.NodeName,
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	s.create(ctx, arrival)
	s.waitEvent(ctx, &victim, "DisruptionBlocked", "a pod arrived")
	s.eventually(ctx, "the node untainted and unmarked", func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := s.kube.Get(ctx, client.ObjectKey{Name: victim.Status.NodeName}, node); err != nil {
			return false, err
		}
		for _, tn := range node.Spec.Taints {
			if tn.Key == v1.DisruptedTaintKey {
				return false, nil
			}
		}
		nc := &v1.NodeClaim{}
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(&victim), nc)
		return err == nil && nc.DeletionTimestamp.IsZero() && !nc.IsTrue(v1.ConditionTypeDisrupting), err
	}, s.describeClaims)
}

// TestNoFlappingOnAStableCluster: after provisioning, consolidation may improve the cluster, but
// then the cluster is stable: no command over many loops, and the few commands it took never
// undo each other.
func TestNoFlappingOnAStableCluster(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.fastDisruption()
	ctx := s.ctx(5 * time.Minute)
	np := kwokNodePool("general", nil)
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	web := deployment("web", 12, "500m", "1Gi", zoneSpread("web"))
	batch := deployment("batch", 5, "2", "6Gi", nodeSelector(v1.LabelArch, "arm64"))
	s.create(ctx, web, batch)
	s.waitRunning(ctx, 12, web.Spec.Template.Labels)
	s.waitRunning(ctx, 5, batch.Spec.Template.Labels)
	names := func() string {
		var out []string
		for _, nc := range s.claims() {
			if !nc.DeletionTimestamp.IsZero() || nc.IsTrue(v1.ConditionTypeDisrupting) {
				out = append(out, "busy")
			}
			out = append(out, nc.Name)
		}
		return strings.Join(out, ",")
	}
	// Settle: the same claims, none busy, for longer than a node takes to become a candidate
	// (InitializedSettle 10 s + consolidateAfter) plus a command's validation. Meanwhile the cost may
	// only go down: a command never undoes another.
	last, since := "", time.Now()
	lowest := s.totalCost()
	s.eventually(ctx, "the cluster to settle", func(context.Context) (bool, error) {
		if n := names(); n != last {
			last, since = n, time.Now()
			if c := s.totalCost(); !strings.Contains(n, "busy") {
				if c > lowest+1e-9 {
					t.Fatalf("cost rose from $%.4f to $%.4f/h between settled states: flapping\n%s", lowest, c, s.describeClaims())
				}
				lowest = c
			}
		}
		return !strings.Contains(last, "busy") && time.Since(since) > 30*time.Second, nil
	}, s.describeClaims)
	settledCost := s.totalCost()
	s.holdsFor(25*time.Second, "the same nodeclaims", func() bool { return names() == last })
	s.waitRunning(ctx, 12, web.Spec.Template.Labels)
	s.waitRunning(ctx, 5, batch.Spec.Template.Labels)
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	if n := len(s.eventsFor(ctx, pool, "DisruptionLaunching")); n > 3 {
		t.Fatalf("%d disruption commands on a cluster that only needed settling (cost now $%.4f/h)", n, settledCost)
	}
}
