package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
)

func TestDeleteNodeClaimDrainsRespectingPDB(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(3 * time.Minute)
	s.create(ctx, kwokNodeClass(0), kwokNodePool("general", nil))
	s.startManager()
	d := deployment("guarded", 4, "1", "1Gi")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector:       &metav1.LabelSelector{MatchLabels: d.Spec.Template.Labels},
		},
	}
	s.create(ctx, d, pdb)
	pods := s.waitRunning(ctx, 4, d.Spec.Template.Labels)
	s.eventually(ctx, "the PDB to allow one disruption", func(ctx context.Context) (bool, error) {
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)
		return err == nil && pdb.Status.DisruptionsAllowed == 1, err
	}, func() string { return "pdb status never computed" })

	victim := pods[0].Spec.NodeName
	var claim v1.NodeClaim
	for _, nc := range s.claims() {
		if nc.Status.NodeName == victim {
			claim = nc
		}
	}
	if claim.Name == "" {
		t.Fatalf("no nodeclaim for node %s\n%s", victim, s.describeClaims())
	}
	if err := s.kube.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	// While the node drains, at most one guarded pod may be unavailable at any time.
	minRunning := 4
	s.eventually(ctx, "node "+victim+" drained and gone", func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kube.List(ctx, &list, client.MatchingLabels(d.Spec.Template.Labels)); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
				ready++
			}
		}
		minRunning = min(minRunning, ready)
		err := s.kube.Get(ctx, client.ObjectKey{Name: victim}, &corev1.Node{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, s.describeClaims)
	if minRunning < 3 {
		t.Errorf("during the drain only %d of 4 guarded pods were running: the PDB (maxUnavailable 1) was not respected", minRunning)
	}
	s.eventually(ctx, "nodeclaim "+claim.Name+" gone", func(ctx context.Context) (bool, error) {
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(&claim), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, s.describeClaims)
	s.waitRunning(ctx, 4, d.Spec.Template.Labels)
	instances := kwok.New(s.kube, nil, kwok.Options{})
	if _, err := instances.Get(ctx, kwok.ProviderIDPrefix+victim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("instance %s still exists after its nodeclaim was deleted: %v", victim, err)
	}
}

// eventsFor lists events about the object with the given reason.
func (s *stack) eventsFor(ctx context.Context, obj client.Object, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	if err := s.kube.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		s.t.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (s *stack) waitEvent(ctx context.Context, obj client.Object, reason, contains string) eventsv1.Event {
	s.t.Helper()
	var found eventsv1.Event
	var seen []string
	s.eventually(ctx, reason+" event on "+obj.GetName(), func(ctx context.Context) (bool, error) {
		seen = nil
		for _, e := range s.eventsFor(ctx, obj, reason) {
			seen = append(seen, e.Note)
			if strings.Contains(e.Note, contains) {
				found = e
				return true, nil
			}
		}
		return false, nil
	}, func() string { return "notes seen: " + strings.Join(seen, " | ") })
	return found
}

func TestUnsatisfiablePodGetsFailedScheduling(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(2 * time.Minute)
	s.create(ctx, kwokNodeClass(0), kwokNodePool("general", nil))
	s.startManager()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mainframe", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{v1.LabelArch: "s390x"},
			Containers:   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	s.create(ctx, pod)
	e := s.waitEvent(ctx, pod, "FailedScheduling", "s390x") // Karpenter's reason; the kube-scheduler uses it too
	t.Logf("FailedScheduling: %s", e.Note)
	if e.ReportingController != "joist" {
		t.Errorf("FailedScheduling reported by %q, want joist", e.ReportingController)
	}
	if n := len(s.claims()); n != 0 {
		t.Errorf("%d nodeclaims launched for a pod nothing can run", n)
	}
}

func TestNodePoolLimitsStopLaunches(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(2 * time.Minute)
	np := kwokNodePool("capped", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")})
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	d := deployment("hungry", 12, "1", "1Gi")
	s.create(ctx, d)
	e := s.waitEvent(ctx, np, "LimitsExceeded", "capped")
	t.Logf("LimitsExceeded: %s", e.Note)
	var cpu resource.Quantity
	for _, nc := range s.claims() {
		c := nc.Status.Capacity[corev1.ResourceCPU]
		cpu.Add(c)
	}
	if cpu.Cmp(resource.MustParse("8")) > 0 {
		t.Errorf("nodeclaims hold %s cpu, above the pool's limits.cpu=8\n%s", cpu.String(), s.describeClaims())
	}
	if len(s.claims()) == 0 {
		t.Errorf("no node launched at all: the limit leaves room for some pods")
	}
}

func TestConvergesThroughProviderErrorsAndSoldOutOffering(t *testing.T) {
	its := catalog.Default() // the binary's kwok catalog
	np := kwokNodePool("general", nil)
	d := deployment("resilient", 30, "500m", "1Gi")
	plan := offlinePlan(t, np, d)
	cheapest := plan.NewNodeClaims[0]
	soldOut := cloudprovider.UnavailableOffering{InstanceType: cheapest.InstanceType.Name, Zone: cheapest.Offering.Zone, CapacityType: cheapest.Offering.CapacityType}
	s := newStack(t, kwok.Options{Seed: 7, ErrorRate: 0.3, UnavailableOfferings: []cloudprovider.UnavailableOffering{soldOut}})
	ctx := s.ctx(3 * time.Minute)
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	s.create(ctx, d)
	pods := s.waitRunning(ctx, 30, d.Spec.Template.Labels)
	s.assertNoEmptyNodes(pods)
	for _, nc := range s.claims() {
		got := cloudprovider.UnavailableOffering{InstanceType: nc.Labels[v1.LabelInstanceType], Zone: nc.Labels[v1.LabelTopologyZone], CapacityType: nc.Labels[v1.CapacityTypeLabelKey]}
		if got == soldOut {
			t.Errorf("nodeclaim %s launched on the sold-out offering %+v", nc.Name, soldOut)
		}
		// It must be the cheapest offering its requirements allow once the sold-out one is skipped.
		var next float64 = -1
		for _, l := range cloudprovider.LaunchOptions(nc.Spec.Requirements, its, nil) {
			if l.Key() != soldOut {
				next = l.Offering.Price
				break
			}
		}
		if p := priceOf(its, nc); p != next {
			t.Errorf("nodeclaim %s costs $%.4f/h, the next-cheapest allowed offering costs $%.4f/h", nc.Name, p, next)
		}
	}
	t.Logf("converged on %d nodes despite 30%% launch errors and sold-out %+v", len(s.claims()), soldOut)
}

func TestGuardrailClusterLimitsStopLaunchesAcrossPools(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(2 * time.Minute)
	cpu := resource.MustParse("12")
	guardrail := &policyv1alpha1.Guardrail{
		ObjectMeta: metav1.ObjectMeta{Name: "platform"},
		Spec:       policyv1alpha1.GuardrailSpec{ClusterLimits: &policyv1alpha1.ClusterLimits{CPU: &cpu}},
	}
	amd := kwokNodePool("amd", nil, v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	arm := kwokNodePool("arm", nil, v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})
	s.create(ctx, guardrail, kwokNodeClass(0), amd, arm)
	s.startManager()
	// A pod's FailedScheduling events form one events/v1 series whose note is the first one's, so
	// pods created before the pools are Ready would keep "no ready NodePool" for minutes.
	s.waitPoolsReady(ctx, amd.Name, arm.Name)
	amdPods := deployment("amd-hungry", 8, "1", "1Gi", nodeSelector(v1.LabelArch, "amd64"))
	armPods := deployment("arm-hungry", 8, "1", "1Gi", nodeSelector(v1.LabelArch, "arm64"))
	s.create(ctx, amdPods, armPods)
	// Some pod of the two deployments must be refused, naming the Guardrail and the limit.
	var note string
	s.eventually(ctx, "a FailedScheduling event naming the Guardrail", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := s.kube.List(ctx, &pods, client.InNamespace("default")); err != nil {
			return false, err
		}
		for i := range pods.Items {
			for _, e := range s.eventsFor(ctx, &pods.Items[i], "FailedScheduling") {
				if strings.Contains(e.Note, `Guardrail "platform"`) && strings.Contains(e.Note, "clusterLimits.cpu=12") {
					note = e.Note
					return true, nil
				}
			}
		}
		return false, nil
	}, s.describeClaims)
	t.Logf("FailedScheduling: %s", note)
	var total resource.Quantity
	pools := map[string]bool{}
	for _, nc := range s.claims() {
		c := nc.Status.Capacity[corev1.ResourceCPU]
		if c.IsZero() {
			c = nc.Spec.Resources.Requests[corev1.ResourceCPU]
		}
		total.Add(c)
		pools[nc.Labels[v1.NodePoolLabelKey]] = true
	}
	if total.Cmp(cpu) > 0 {
		t.Errorf("Joist nodes hold %s cpu across pools %v, above the Guardrail's clusterLimits.cpu=12\n%s", total.String(), pools, s.describeClaims())
	}
}
