package provisioning

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// denyPool makes the apiserver refuse every NodeClaim of pool (a ValidatingAdmissionPolicy), as a
// quota, a policy engine or a bad template would, and waits until the refusal is in force.
func denyPool(t *testing.T, ctx context.Context, kube client.Client, pool string) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + pool},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{v1.Group}, APIVersions: []string{"v1"}, Resources: []string{"nodeclaims"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('karpenter.sh/nodepool' in object.metadata.labels) || object.metadata.labels['karpenter.sh/nodepool'] != '" + pool + "'",
				Message:    "nodeclaims of " + pool + " are refused",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + pool},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	probe := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{v1.NodePoolLabelKey: pool}},
		Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: "In", Values: []string{"on-demand"}}}, NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := kube.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "are refused") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("admission policy not in force after 30s (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A pool whose NodeClaim creates all fail costs at most 6 creates a minute, and pods that another
// pool can take launch there meanwhile.
func TestFailingPoolBacksOffAndOthersLaunch(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	denyPool(t, ctx, e.Client, "broken")

	var brokenCreates atomic.Int32
	kube := interceptor.NewClient(mustWatchClient(t, e), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && nc.Labels[v1.NodePoolLabelKey] == "broken" {
				brokenCreates.Add(1)
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	readyPool(t, ctx, e.Client, "broken", 100, map[string]string{"example.com/only": "broken"})
	readyPool(t, ctx, e.Client, "good", 10, nil)
	pendingPods(t, ctx, e.Client, "anywhere", 4, nil)
	pendingPods(t, ctx, e.Client, "pinned", 2, map[string]string{"example.com/only": "broken"})

	p, clk, rec := testProvisioner(kube)
	errs := 0
	for second := 0; second < 60; second++ {
		if err := p.Provision(ctx); err != nil {
			errs++
		}
		clk.Step(time.Second)
	}
	if n := brokenCreates.Load(); n > 6 || n < 2 {
		t.Errorf("broken pool: %d creates in a simulated minute of batches every second, want 2–6 (backed off, still probed)", n)
	}
	if got := len(claimsOf(t, ctx, e.Client, "good")); got == 0 {
		t.Errorf("no NodeClaim launched from the good pool while the broken one failed")
	}
	if errs == 0 {
		t.Errorf("no batch reported the failing creates")
	}
	if !drainEvents(rec, ReasonLaunchHeld, "NodeClaim creates for NodePool broken are failing") {
		t.Errorf("no %s event says why the broken pool is held", ReasonLaunchHeld)
	}
}

// A pool whose template label value the apiserver would refuse on every NodeClaim is not launched
// from at all, its event names the label, and its pods go to a pool that works.
func TestInvalidTemplateLabelValueHoldsPool(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	readyPool(t, ctx, e.Client, "bad-label", 100, map[string]string{"team": "a b"})
	readyPool(t, ctx, e.Client, "good", 10, nil)
	pendingPods(t, ctx, e.Client, "p", 3, nil)
	p, _, rec := testProvisioner(e.Client)
	for i := 0; i < 5; i++ {
		if err := p.Provision(ctx); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if got := len(claimsOf(t, ctx, e.Client, "good")); got == 0 {
		t.Errorf("no NodeClaim from the good pool")
	}
	if !drainEvents(rec, ReasonLaunchHeld, `label team value "a b" is invalid`) {
		t.Errorf("no %s event names the invalid label", ReasonLaunchHeld)
	}
}

// The launch gate alone: a pool failing on every probe gets at most 6 creates in any minute.
func TestLaunchGateRate(t *testing.T) {
	clk := newFakeClock()
	g := newLaunchGate(clk)
	creates := 0
	for tick := 0; tick < 600; tick++ { // ten minutes, asking every second
		if g.startCreate("broken") {
			creates++
			g.observe("broken", errRefused)
		}
		clk.Step(time.Second)
		if tick == 59 && creates > 6 {
			t.Fatalf("%d creates in the first minute, want ≤ 6", creates)
		}
	}
	if creates > 12 {
		t.Errorf("%d creates in ten minutes, want the hold to grow (≤ 12)", creates)
	}
	g.observe("broken", nil)
	if !g.startCreate("broken") || !g.startCreate("broken") {
		t.Errorf("a success must clear the hold")
	}
}

var errRefused = errors.New("refused")

func newFakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Now()) }

// drainEvents reads the recorded events and reports whether one has reason and contains substr.
func drainEvents(rec *events.FakeRecorder, reason, substr string) bool {
	found := false
	for {
		select {
		case ev := <-rec.Events:
			if strings.Contains(ev, reason) && strings.Contains(ev, substr) {
				found = true
			}
		default:
			return found
		}
	}
}

func mustWatchClient(t *testing.T, e *env.Env) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
