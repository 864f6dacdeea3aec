// Package disruption removes nodes that are no longer needed. This first method is emptiness: a
// node running no pods but DaemonSet and finished ones, for its pool's consolidateAfter, is deleted
// (and so drained and terminated), within the pool's disruption budget. Consolidation of
// underutilized nodes, drift and expiry come later.
package disruption

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/state"
)

// InitializedSettle is how long after a node initialized its emptiness starts to count.
const InitializedSettle = 10 * time.Second

// Emptiness deletes empty NodeClaims.
type Emptiness struct {
	kube        client.Client
	nominations *state.Nominations
	recorder    events.EventRecorder
	clock       clock.PassiveClock
}

// NewEmptiness returns the emptiness controller.
func NewEmptiness(kube client.Client, nominations *state.Nominations, recorder events.EventRecorder, clk clock.PassiveClock) *Emptiness {
	return &Emptiness{kube: kube, nominations: nominations, recorder: recorder, clock: clk}
}

// Reconcile checks one claim and deletes it once it has been empty for consolidateAfter.
func (e *Emptiness) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(v1.ConditionTypeInitialized) || nc.Status.NodeName == "" {
		return reconcile.Result{}, nil
	}
	np := &v1.NodePool{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: nc.Labels[v1.NodePoolLabelKey]}, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := nc.DeepCopy()
	empty, why, err := e.empty(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !empty {
		if nc.ClearCondition(v1.ConditionTypeEmpty) {
			return reconcile.Result{}, e.patchStatus(ctx, stored, nc)
		}
		return reconcile.Result{}, nil
	}
	if nc.GetCondition(v1.ConditionTypeEmpty) == nil {
		nc.SetCondition(v1.ConditionTypeEmpty, metav1.ConditionTrue, "Empty", why)
		if err := e.patchStatus(ctx, stored, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	after := np.Spec.Disruption.ConsolidateAfter
	if after.IsNever() {
		return reconcile.Result{}, nil
	}
	// A node that just initialized may be empty only because its pods have not bound yet (after a
	// restart their nominations are gone): count emptiness from InitializedSettle after init at the earliest.
	since := nc.GetCondition(v1.ConditionTypeEmpty).LastTransitionTime.Time
	if settled := nc.GetCondition(v1.ConditionTypeInitialized).LastTransitionTime.Add(InitializedSettle); settled.After(since) {
		since = settled
	}
	if left := since.Add(*after.Duration).Sub(e.clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	allowed, err := e.budgetAllows(ctx, np)
	if err != nil || !allowed {
		return reconcile.Result{RequeueAfter: 5 * time.Second}, err
	}
	e.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "DisruptionTerminating", "Disrupt",
		"Disrupting NodeClaim: empty for %s (consolidateAfter)", after.String())
	log.FromContext(ctx).Info("deleting empty nodeclaim", "nodeclaim", nc.Name, "nodepool", np.Name)
	if err := e.kube.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting empty nodeclaim %s: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

// empty reports whether the claim's node runs nothing but DaemonSet and finished pods, is not
// protected by do-not-disrupt, and no pending pod is on its way to it.
func (e *Emptiness) empty(ctx context.Context, nc *v1.NodeClaim) (bool, string, error) {
	if len(e.nominations.PodsOf(nc.Name)) > 0 {
		return false, "", nil
	}
	node := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return false, "", client.IgnoreNotFound(err)
	}
	if node.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		return false, "", nil
	}
	pods := &corev1.PodList{}
	if err := e.kube.List(ctx, pods, client.MatchingFields{indexes.PodNodeName: node.Name}); err != nil {
		return false, "", fmt.Errorf("listing pods on node %s: %w", node.Name, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || ownedByDaemonSet(&p) {
			continue
		}
		return false, "", nil
	}
	return true, "the node runs no pods but DaemonSet and finished ones", nil
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// budgetAllows reports whether one more of the pool's nodes may be disrupted now: fewer of its
// claims are being deleted than the strictest budget that applies to emptiness allows. Budgets
// with a schedule are treated as always active (the conservative reading) until scheduled budgets
// land with the disruption controller.
func (e *Emptiness) budgetAllows(ctx context.Context, np *v1.NodePool) (bool, error) {
	claims := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		return false, fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	total, deleting := len(claims.Items), 0
	for _, c := range claims.Items {
		if !c.DeletionTimestamp.IsZero() {
			deleting++
		}
	}
	allowed := total
	for _, b := range np.Spec.Disruption.Budgets {
		if len(b.Reasons) > 0 && !hasReason(b.Reasons, v1.DisruptionReasonEmpty) {
			continue
		}
		allowed = min(allowed, budgetNodes(b.Nodes, total))
	}
	return deleting < allowed, nil
}

func hasReason(reasons []v1.DisruptionReason, r v1.DisruptionReason) bool {
	for _, x := range reasons {
		if x == r {
			return true
		}
	}
	return false
}

// budgetNodes turns "5" or "10%" of total into a node count; a percentage rounds up, so any
// non-zero percentage of a non-empty pool allows at least one node (as Karpenter does).
func budgetNodes(nodes string, total int) int {
	if pct, ok := strings.CutSuffix(nodes, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil {
			return 0
		}
		return (total*p + 99) / 100
	}
	n, err := strconv.Atoi(nodes)
	if err != nil {
		return 0
	}
	return n
}

func (e *Emptiness) patchStatus(ctx context.Context, stored, nc *v1.NodeClaim) error {
	if err := e.kube.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err))
	}
	return nil
}

// Register sets the controller up: it looks at a claim when the claim changes or a pod leaves or
// lands on its node.
func (e *Emptiness) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("disruption.emptiness").
		For(&v1.NodeClaim{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			node := o.(*corev1.Pod).Spec.NodeName
			if node == "" {
				return nil
			}
			claims := &v1.NodeClaimList{}
			if err := e.kube.List(ctx, claims, client.MatchingFields{indexes.NodeClaimNodeName: node}); err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(claims.Items))
			for _, c := range claims.Items {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
			}
			return out
		})).
		Complete(e)
}
