// Package nodepool keeps NodePool status: the capacity and node count of its NodeClaims, and the
// Ready condition (its NodeClass exists). Only Ready pools are provisioned from. It also stamps the
// pool's template hash and hash version on the pool, as Karpenter's nodepool.hash controller does
// (the same annotations and values, so tooling that reads them keeps working).
package nodepool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
)

// Controller reconciles NodePool status.
type Controller struct {
	kube client.Client
	// informers, when set (Register), serve the pool's claims from the cache's store.
	informers ctrlcache.Informers
	// tally, when set (Register), keeps the pools' claim sums from the claim events.
	tally *tally
}

// New returns the NodePool status controller.
func New(kube client.Client) *Controller { return &Controller{kube: kube} }

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kwok.joist.dev,resources=kwoknodeclasses,verbs=get;list;watch

// Reconcile recomputes one pool's status and writes it with one patch.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := c.stampHash(ctx, np); err != nil {
		return reconcile.Result{}, err
	}
	stored := np.DeepCopy()
	resources, nodes, err := c.count(ctx, np.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := resources[name]; !ok {
			resources[name] = resource.MustParse("0")
		}
	}
	np.Status.Resources, np.Status.Nodes = resources, &nodes

	ready, msg, err := c.nodeClassReady(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	status, reason := metav1.ConditionTrue, "NodeClassReady"
	if !ready {
		status, reason = metav1.ConditionFalse, "NodeClassNotFound"
	}
	np.SetCondition(v1.ConditionTypeNodeClassReady, status, reason, msg)
	np.SetCondition(v1.ConditionTypeReady, status, reason, msg)
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kube.Status().Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool %s status: %w", np.Name, err))
	}
	return reconcile.Result{}, nil
}

// count returns the pool's summed claim capacity and claim count (claims not being deleted): from the
// tally the claim events keep once registered, else counted from the claims.
func (c *Controller) count(ctx context.Context, pool string) (corev1.ResourceList, int64, error) {
	if c.tally != nil {
		resources, nodes := c.tally.of(pool)
		return resources, nodes, nil
	}
	claims, err := cachedobjects.Objects[v1.NodeClaim](ctx, c.informers, c.kube, &v1.NodeClaimList{}, InPool(pool))
	if err != nil {
		return nil, 0, fmt.Errorf("listing nodeclaims of nodepool %s: %w", pool, err)
	}
	t := newTally()
	for _, nc := range claims {
		t.observe(nc)
	}
	resources, nodes := t.of(pool)
	return resources, nodes, nil
}

// stampHash writes the template hash and its version into the pool's annotations when they differ.
func (c *Controller) stampHash(ctx context.Context, np *v1.NodePool) error {
	hash := np.Hash()
	if np.Annotations[v1.NodePoolHashAnnotationKey] == hash && np.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion {
		return nil
	}
	stored := np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[v1.NodePoolHashAnnotationKey] = hash
	np.Annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	if err := c.kube.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("stamping hash on nodepool %s: %w", np.Name, err))
	}
	return nil
}

// nodeClassReady reports whether the referenced NodeClass exists (any group and kind the apiserver serves).
func (c *Controller) nodeClassReady(ctx context.Context, np *v1.NodePool) (bool, string, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return false, "spec.template.spec.nodeClassRef is not set", nil
	}
	mapping, err := c.kube.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.Group, Kind: ref.Kind})
	if err != nil {
		return false, fmt.Sprintf("NodeClass kind %s.%s is not served by this cluster: install its CRD or fix spec.template.spec.nodeClassRef", ref.Kind, ref.Group), nil
	}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, c.nodeClassObject(mapping.GroupVersionKind)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("%s %s not found: create it or fix spec.template.spec.nodeClassRef.name", ref.Kind, ref.Name), nil
		}
		return false, "", fmt.Errorf("getting %s %s: %w", ref.Kind, ref.Name, err)
	}
	return true, "", nil
}

// nodeClassObject is what the NodeClass is read into: its Go type when the scheme has it (the
// providers' classes), which the manager's client serves from the informer cache the provider's
// own controllers use; else an unstructured object, which it reads from the apiserver. Read
// unstructured every time, the providers' classes cost one apiserver GET per reconcile, and each
// claim event of the pool reconciles it: ~200 GETs in 30 s at 1,000 nodes in make bench-scale.
func (c *Controller) nodeClassObject(gvk schema.GroupVersionKind) client.Object {
	if obj, err := c.kube.Scheme().New(gvk); err == nil {
		if o, ok := obj.(client.Object); ok {
			return o
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Register sets the controller up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.informers = mgr.GetCache()
	c.tally = newTally()
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodepool.status").
		For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, claimEvents(claimEventsWait, c.tally)).
		Complete(c)
}
