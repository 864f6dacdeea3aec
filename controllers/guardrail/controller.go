// Package guardrail keeps every Guardrail's status current: the existing NodePools, Pods, Nodes and
// NodeClaims its rules would deny (policy.Report, the functions the admission webhooks run), with
// counts per rule, and a Warning event on each offending object when it first appears in a report.
package guardrail

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/policy"
)

// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools;nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// EventReason is the reason of the event on an object a Guardrail would deny.
const EventReason = "GuardrailWouldDeny"

// InstanceTypesFunc returns the cloud provider's instance types a NodePool could launch.
type InstanceTypesFunc func(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error)

// Options tune the report.
type Options struct {
	// Resync recomputes the report this often even when nothing is observed to change.
	Resync time.Duration
	// MinInterval is the least time between two reports: a burst of pod changes costs one pass.
	MinInterval time.Duration
	// InstallNamespace is Joist's namespace; its pods are never judged (the webhooks skip them).
	InstallNamespace string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options { return Options{Resync: 5 * time.Minute, MinInterval: 10 * time.Second} }

// Controller computes the report.
type Controller struct {
	kube          client.Client
	instanceTypes InstanceTypesFunc
	recorder      events.EventRecorder
	clock         clock.PassiveClock
	opts          Options

	lastRun time.Time
	// announced are the findings an event was emitted for, so that each gets one event per process.
	announced map[string]bool
}

// New returns the controller; instanceTypes may be nil (pools are then judged without a catalog).
func New(kube client.Client, instanceTypes InstanceTypesFunc, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	return &Controller{kube: kube, instanceTypes: instanceTypes, recorder: recorder, clock: clk, opts: opts, announced: map[string]bool{}}
}

// reportKey is the one request: every change recomputes the whole report.
var reportKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "guardrail-report"}}

// Register watches Guardrails and the objects they judge; a change to any of them queues the report.
func (c *Controller) Register(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{reportKey}
	})
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	return ctrl.NewControllerManagedBy(mgr).
		Named("guardrail-report").
		Watches(&v1alpha1.Guardrail{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, one, changed).
		Watches(&corev1.Node{}, one, builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&v1.NodeClaim{}, one, builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Namespace{}, one, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(c)
}

// Reconcile recomputes every Guardrail's report and patches the statuses that changed.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	if wait := c.lastRun.Add(c.opts.MinInterval).Sub(now); !c.lastRun.IsZero() && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	c.lastRun = now
	var guardrails v1alpha1.GuardrailList
	if err := c.kube.List(ctx, &guardrails); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing guardrails: %w", err)
	}
	if len(guardrails.Items) == 0 {
		return reconcile.Result{}, nil
	}
	inv, err := c.inventory(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	findings := policy.Report(guardrails.Items, inv)
	ev := policy.Evaluate(guardrails.Items)
	for _, name := range ev.BuiltInReporters() {
		findings[name] = append(findings[name], findings[""]...)
	}
	announced := map[string]bool{}
	for i := range guardrails.Items {
		g := &guardrails.Items[i]
		if err := c.patchStatus(ctx, g, findings[g.Name], now); err != nil {
			return reconcile.Result{}, err
		}
		c.announce(g, findings[g.Name], announced)
	}
	c.announced = announced
	return reconcile.Result{RequeueAfter: c.opts.Resync}, nil
}

// inventory lists what the report judges.
func (c *Controller) inventory(ctx context.Context) (policy.Inventory, error) {
	var pools v1.NodePoolList
	var pods corev1.PodList
	var nodes corev1.NodeList
	var claims v1.NodeClaimList
	var namespaces corev1.NamespaceList
	for _, l := range []client.ObjectList{&pools, &pods, &nodes, &claims, &namespaces} {
		if err := c.kube.List(ctx, l); err != nil {
			return policy.Inventory{}, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	inv := policy.Inventory{NodePools: pools.Items, Nodes: nodes.Items, NodeClaims: claims.Items,
		NamespaceLabels: map[string]map[string]string{}, Catalogs: map[string][]*catalog.InstanceType{}}
	for _, ns := range namespaces.Items {
		inv.NamespaceLabels[ns.Name] = ns.Labels
	}
	for _, p := range pods.Items {
		if p.Namespace == c.opts.InstallNamespace || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		inv.Pods = append(inv.Pods, p)
	}
	if c.instanceTypes != nil {
		for i := range pools.Items {
			types, err := c.instanceTypes(ctx, &pools.Items[i])
			if err != nil {
				log.FromContext(ctx).V(1).Info("judging nodepool without a catalog", "nodepool", pools.Items[i].Name, "error", err.Error())
				continue
			}
			inv.Catalogs[pools.Items[i].Name] = types
		}
	}
	return inv, nil
}

func (c *Controller) patchStatus(ctx context.Context, g *v1alpha1.Guardrail, findings []policy.Finding, now time.Time) error {
	want := g.DeepCopy()
	st := &want.Status
	st.WouldDeny, st.Rules, st.Summary, st.Objects = policy.StatusReport(findings, policy.MaxReportedObjects)
	st.ObservedGeneration = g.Generation
	if equality.Semantic.DeepEqual(g.Status, want.Status) && g.Status.LastEvaluated != nil {
		return nil
	}
	st.LastEvaluated = &metav1.Time{Time: now}
	if err := c.kube.Status().Patch(ctx, want, client.MergeFrom(g)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status of guardrail %s: %w", g.Name, err)
	}
	return nil
}

// announce emits one Warning event per new finding on the offending object.
func (c *Controller) announce(g *v1alpha1.Guardrail, findings []policy.Finding, announced map[string]bool) {
	for _, f := range findings {
		key := g.Name + "|" + f.Kind + "|" + f.Namespace + "|" + f.Name + "|" + f.Violation.Rule + "|" + f.Violation.Field.String()
		announced[key] = true
		if c.announced[key] || c.recorder == nil {
			continue
		}
		obj := &corev1.ObjectReference{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name, UID: f.UID, APIVersion: apiVersionOf(f.Kind)}
		c.recorder.Eventf(obj, g, corev1.EventTypeWarning, EventReason, "Audit",
			"Guardrail %q (enforcement %s) would deny this %s: %s: %s", g.Name, policy.EnforcementOf(g), f.Kind, f.Violation.Field, f.Violation.Detail())
	}
}

func apiVersionOf(kind string) string {
	if kind == "NodePool" || kind == "NodeClaim" {
		return v1.GroupVersion.String()
	}
	return "v1"
}
