// Package pod observes karpenter_pods_startup_duration_seconds: for each pod created after the loop
// started, the time from its creation to its first Ready condition, observed once per pod.
package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// StartupDuration is karpenter_pods_startup_duration_seconds.
var StartupDuration = prometheus.NewSummary(prometheus.SummaryOpts{
	Name:       "karpenter_pods_startup_duration_seconds",
	Help:       "Time from pod creation until the pod first turned Ready (pods created while the manager leads).",
	Objectives: map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}, // Karpenter's

})

func init() { crmetrics.Registry.MustRegister(StartupDuration) }

// Controller observes each pod's startup once.
type Controller struct {
	kube    client.Client
	started time.Time

	mu       sync.Mutex
	observed map[types.NamespacedName]types.UID
}

// New returns the pod startup loop.
func New(kube client.Client, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, started: clk.Now(), observed: map[types.NamespacedName]types.UID{}}
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile observes the pod's startup duration when it is Ready for the first time.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.kube.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("getting pod %s: %w", req.NamespacedName, err)
		}
		c.mu.Lock()
		delete(c.observed, req.NamespacedName)
		c.mu.Unlock()
		return reconcile.Result{}, nil
	}
	ready := readySince(pod)
	if ready.IsZero() || pod.CreationTimestamp.Time.Before(c.started) {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	seen := c.observed[req.NamespacedName] == pod.UID
	c.observed[req.NamespacedName] = pod.UID
	c.mu.Unlock()
	if !seen {
		StartupDuration.Observe(ready.Sub(pod.CreationTimestamp.Time).Seconds())
	}
	return reconcile.Result{}, nil
}

// readySince is when the pod's Ready condition turned True; zero when it is not Ready.
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// Register sets the loop up: only deletions and pods that are Ready reach Reconcile.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("metrics.pod").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return isReady(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return isReady(e.ObjectNew) && !isReady(e.ObjectOld) },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

func isReady(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && !readySince(pod).IsZero()
}
