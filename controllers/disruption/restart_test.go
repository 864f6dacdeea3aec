package disruption

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// noDrift is a cloud whose instances never drift; nothing else of it is called here.
type noDrift struct{ cloudprovider.CloudProvider }

func (noDrift) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// emptySnapshot plans nothing.
type emptySnapshot struct{}

func (emptySnapshot) ClusterSnapshot(context.Context) (solver.Input, error) {
	return solver.Input{}, nil
}

// A manager that restarts mid-command finds a node tainted karpenter.sh/disrupted and its claim
// Disrupting with no command of its own: its first pass releases both, and the same pass's status
// write (Consolidatable, lastPodEventTime) does not put the Disrupting condition back from the copy
// it read before the release.
func TestRestartReleasesUnfinishedCommandInOnePass(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "100%"}}},
	}}
	create(t, kube, np)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://node-a", Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}
	create(t, kube, node)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"},
		Annotations: map[string]string{v1.NodePoolHashAnnotationKey: np.Hash(), v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}},
		Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
	create(t, kube, nc)
	nc.Status.NodeName, nc.Status.ProviderID = "node-a", "kwok://node-a"
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "")
	}
	nc.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, v1.ConsolidatableReason, "")
	nc.SetCondition(v1.ConditionTypeDisrupting, metav1.ConditionTrue, string(v1.DisruptionReasonUnderutilized), "the dead process's command")
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}

	c := New(kube, kube, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if disruptionpolicy.HasDisruptedTaint(node) {
		t.Errorf("node still tainted: %v", node.Spec.Taints)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	if d := nc.GetCondition(v1.ConditionTypeDisrupting); d != nil {
		t.Errorf("claim still carries Disrupting=%s (%s) after the releasing pass", d.Status, d.Message)
	}
}

func create(t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// restartFixture is a pool with node-a (tainted, its claim Disrupting) and an initialized replacement
// repl-1, as a dead leader's command left them.
func restartFixture(t *testing.T, kube client.Client, record string) (*corev1.Node, *v1.NodeClaim, *v1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "100%"}}},
	}}
	create(t, kube, np)
	claim := func(name string, disrupting bool, annotations map[string]string) *v1.NodeClaim {
		annotations[v1.NodePoolHashAnnotationKey] = np.Hash()
		annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "general"}, Annotations: annotations},
			Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
		create(t, kube, nc)
		nc.Status.NodeName, nc.Status.ProviderID = name, "kwok://"+name
		for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
			nc.SetCondition(c, metav1.ConditionTrue, c, "")
		}
		if disrupting {
			nc.SetCondition(v1.ConditionTypeDisrupting, metav1.ConditionTrue, string(v1.DisruptionReasonUnderutilized), "the dead leader's command")
		}
		if err := kube.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://node-a", Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}
	create(t, kube, node)
	create(t, kube, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "repl-1", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://repl-1"}})
	target := claim("node-a", true, map[string]string{v1.DisruptionCommandAnnotationKey: record})
	replacement := claim("repl-1", false, map[string]string{})
	return node, target, replacement
}

func recordJSON(t *testing.T, r commandRecord) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A new leader finds a command the dead one recorded on its NodeClaim: it resumes it — the
// replacement is up and the validation delay has passed, so the node's claim is deleted — instead
// of releasing the node and planning again.
func TestRestartResumesRecordedCommand(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	rec := commandRecord{ID: "node-a-1", Reason: v1.DisruptionReasonUnderutilized, Started: time.Now().Add(-time.Minute),
		Targets: []string{"node-a"}, Replacements: []string{"repl-1"}, Pools: []string{"general"}, Message: "Underutilized: replacing 1 node(s) by 1", Node: "node-a"}
	node, target, replacement := restartFixture(t, kube, recordJSON(t, rec))

	c := New(kube, kube, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(target), target); !apierrors.IsNotFound(err) && target.DeletionTimestamp.IsZero() {
		t.Errorf("the resumed command did not delete nodeclaim node-a (err %v, conditions %v)", err, target.Status.Conditions)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if !disruptionpolicy.HasDisruptedTaint(node) {
		t.Error("node-a was untainted: the command was released, not resumed")
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(replacement), replacement); err != nil || !replacement.DeletionTimestamp.IsZero() {
		t.Errorf("the replacement must stay: err %v", err)
	}
}

// A recorded command that lost one of its NodeClaims meanwhile is abandoned cleanly: the remaining
// node is untainted and unmarked, its record removed, and the replacement that took no pods deleted.
func TestRestartAbandonsRecordedCommandMissingAClaim(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	rec := commandRecord{ID: "node-a-1", Reason: v1.DisruptionReasonUnderutilized, Started: time.Now().Add(-time.Minute),
		Targets: []string{"node-a", "node-gone"}, Replacements: []string{"repl-1"}, Pools: []string{"general"}, Node: "node-a"}
	node, target, replacement := restartFixture(t, kube, recordJSON(t, rec))

	c := New(kube, kube, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if disruptionpolicy.HasDisruptedTaint(node) {
		t.Error("node-a still tainted")
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(target), target); err != nil {
		t.Fatal(err)
	}
	if target.GetCondition(v1.ConditionTypeDisrupting) != nil || target.Annotations[v1.DisruptionCommandAnnotationKey] != "" {
		t.Errorf("node-a's claim still marked: conditions %v, record %q", target.Status.Conditions, target.Annotations[v1.DisruptionCommandAnnotationKey])
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(replacement), replacement); !apierrors.IsNotFound(err) && replacement.DeletionTimestamp.IsZero() {
		t.Errorf("the empty replacement of the abandoned command was kept (err %v)", err)
	}
}

// The record a command writes on each target reads back as the same command.
func TestCommandRecordsRoundTrip(t *testing.T) {
	cmd := &command{reason: v1.DisruptionReasonDrifted, pools: map[string]bool{"a": true, "b": true}, replacements: []string{"r1", "r2"},
		started: time.Date(2026, 12, 2, 7, 0, 0, 123, time.UTC), savings: 0.25, message: "m",
		targets:  []target{{claim: "c1", node: "n1", pods: map[types.UID]bool{"u1": true, "u2": true}}, {claim: "c2", node: "n2", pods: map[types.UID]bool{"u3": true}}},
		reserved: []state.Slot{{Pod: "u1", Owner: "o1", Claim: "r1"}, {Pod: "u2", Owner: "o1", Claim: "r2"}, {Pod: "u3", Owner: "o2", Claim: "r1"}},
		// A reordered command: a group spans both targets' pods; the round trip keeps it whole, in place.
		keepReplacements: true,
		asPlanned: []plannedGroup{{replacement: -1, node: "n9", pods: map[types.UID]bool{"u2": true}},
			{replacement: 0, pods: map[types.UID]bool{"u1": true, "u3": true}}}}
	recs := map[string]commandRecord{}
	for i, r := range cmd.records() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back commandRecord
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		recs[cmd.targets[i].claim] = back
	}
	got, missing := commandFromRecords(recs)
	if len(missing) > 0 {
		t.Fatalf("missing %v", missing)
	}
	got.started = got.started.UTC()
	if !reflect.DeepEqual(got, cmd) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, cmd)
	}
}

// A new leader finds a command the dead one executed: node-a's claim is deleting (its drain under
// way) and its record names where the re-simulation put node-a's pod (repl-1). The new leader holds
// that room again: while the pod drains it counts on repl-1, and once evicted its re-creation is
// nominated to repl-1 — the provisioner buys nothing for it. Without the recorded slots the
// reservation died with the old process.
func TestRestartRestoresReservationOfExecutingCommand(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	const rs = types.UID("11111111-2222-3333-4444-555555555555")
	rec := commandRecord{ID: "node-a-1", Reason: v1.DisruptionReasonUnderutilized, Started: time.Now().Add(-time.Minute),
		Targets: []string{"node-a"}, Replacements: []string{"repl-1"}, Pools: []string{"general"}, Node: "node-a"}
	_, target, _ := restartFixture(t, kube, "")
	app := ownedPod(t, kube, "app-1", "node-a", "500m", rs)
	rec.Pods = []types.UID{app.UID}
	rec.Reserved = []reservedSlot{{Pod: app.UID, Owner: rs, Claim: "repl-1"}}
	// As the dead leader left it: the record with its reservation, the claim deleted and draining.
	stored := target.DeepCopy()
	target.Annotations[v1.DisruptionCommandAnnotationKey] = recordJSON(t, rec)
	target.Finalizers = []string{"test.joist.dev/draining"}
	if err := kube.Patch(ctx, target, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, target); err != nil {
		t.Fatal(err)
	}

	noms := nomination.New(kube, nil, state.NewNominations(), func() {}, clock.RealClock{}, nomination.DefaultOptions())
	c := New(kube, kube, noDrift{}, emptySnapshot{}, noms, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if claim, _ := noms.NominationOf(app, "", nil); claim != "repl-1" {
		t.Fatalf("the draining pod counts on %q after the restart, want repl-1 (its command's reservation)", claim)
	}
	// The drain evicts it; its ReplicaSet re-creates it.
	if err := kube.Delete(ctx, app, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	recreated := ownedPod(t, kube, "app-2", "", "500m", rs)
	claims := &v1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	var ncs []*v1.NodeClaim
	for i := range claims.Items {
		ncs = append(ncs, &claims.Items[i])
	}
	noms.Sweep(ncs, []*corev1.Pod{recreated})
	if claim, _ := noms.NominationOf(recreated, "", nil); claim != "repl-1" {
		t.Errorf("the re-created pod counts on %q, want repl-1", claim)
	}
	// A second pass restores nothing twice.
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.restored) != 1 {
		t.Errorf("restored %v, want the one command", c.restored)
	}
}
