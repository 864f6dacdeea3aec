package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// +kubebuilder:rbac:groups=kwok.joist.dev,resources=kwokinstances,verbs=get;list;watch;create;delete

// registerPoll is how often booting instances are checked for a due registration.
const registerPoll = 250 * time.Millisecond

var _ manager.Runnable = (*CloudProvider)(nil)

// register launches node: its Node is written now, or, with a registration delay, a KWOKInstance
// records the booting instance until the Node is due. It returns the instance as launched, which is
// the one already recorded when an earlier launch for the same claim got that far.
func (c *CloudProvider) register(ctx context.Context, node *corev1.Node, nodeClass *kwokv1alpha1.KWOKNodeClass) (*corev1.Node, error) {
	delay := time.Duration(0)
	if nodeClass.Spec.RegistrationDelay != nil {
		delay = nodeClass.Spec.RegistrationDelay.Duration
	}
	if delay <= 0 {
		asRegistered(node)
		if err := c.kube.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		return node, nil
	}
	inst := instanceFor(node, time.Now().Add(delay))
	if err := c.kube.Create(ctx, inst); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("recording kwok instance %s: %w", node.Name, err)
		}
		// Launched before (by a process that crashed, say): report that instance, not this one.
		var existing *corev1.Node
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := c.booting(ctx, node.Name)
			existing = n
			return n != nil, err
		})
		if err != nil {
			return nil, fmt.Errorf("reading kwok instance %s launched earlier: %w", node.Name, err)
		}
		return existing, nil
	}
	return node, nil
}

// asRegistered gives a Node written at launch what the NodeClaim lifecycle's registration adds
// (karpenter.sh/registered, the termination finalizer; the claim's labels and taints it has
// already), so that registering it, in the launch's own reconcile, writes only the claim: no Node
// patch, which was one more round trip on a lifecycle worker per launch (1,000 per 1,000 launches
// in make bench-scale). A booting instance's Node is registered as before, once it appears.
func asRegistered(node *corev1.Node) {
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Finalizers = append(node.Finalizers, v1.TerminationFinalizer)
}

// Start registers booting instances as their time comes, including those launched before a restart.
func (c *CloudProvider) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("kwok")
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.registerDue(ctx); err != nil {
			logger.Error(err, "registering booting kwok instances")
		}
	}, registerPoll)
	return nil
}

// registerDue writes the Node of every booting instance whose registration time has come, then
// forgets the instance.
func (c *CloudProvider) registerDue(ctx context.Context) error {
	var list kwokv1alpha1.KWOKInstanceList
	if err := c.kube.List(ctx, &list); err != nil {
		return fmt.Errorf("listing kwok instances: %w", err)
	}
	now := time.Now()
	for i := range list.Items {
		inst := &list.Items[i]
		if inst.Spec.RegisterAt.After(now) || !inst.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.kube.Create(ctx, nodeOf(inst)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering kwok node %s: %w", inst.Name, err)
		}
		if err := c.kube.Delete(ctx, inst); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("forgetting registered kwok instance %s: %w", inst.Name, err)
		}
	}
	return nil
}

// booting returns the Node a booting instance will register as, or nil when there is none.
func (c *CloudProvider) booting(ctx context.Context, name string) (*corev1.Node, error) {
	inst := &kwokv1alpha1.KWOKInstance{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, inst); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting kwok instance %s: %w", name, err)
	}
	if !inst.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return nodeOf(inst), nil
}

func (c *CloudProvider) listBooting(ctx context.Context) ([]*corev1.Node, error) {
	var list kwokv1alpha1.KWOKInstanceList
	if err := c.kube.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing kwok instances: %w", err)
	}
	var out []*corev1.Node
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, nodeOf(&list.Items[i]))
		}
	}
	return out, nil
}

// terminateBooting terminates an instance that has not registered yet; terminated is false when
// there is no such instance.
func (c *CloudProvider) terminateBooting(ctx context.Context, name string) (terminated bool, err error) {
	inst := &kwokv1alpha1.KWOKInstance{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.kube.Delete(ctx, inst); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("terminating booting kwok instance %s: %w", name, err)
	}
	return true, nil
}

// instanceFor records node as booting until registerAt.
func instanceFor(node *corev1.Node, registerAt time.Time) *kwokv1alpha1.KWOKInstance {
	return &kwokv1alpha1.KWOKInstance{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name},
		Spec: kwokv1alpha1.KWOKInstanceSpec{
			RegisterAt:   metav1.NewTime(registerAt),
			InstanceType: node.Labels[v1.LabelInstanceType], Zone: node.Labels[v1.LabelTopologyZone],
			CapacityType: node.Labels[v1.CapacityTypeLabelKey],
			Labels:       node.Labels, Annotations: node.Annotations, Taints: node.Spec.Taints,
			Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable,
		},
	}
}

// nodeOf is the Node a booting instance registers as.
func nodeOf(inst *kwokv1alpha1.KWOKInstance) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.Name, Labels: inst.Spec.Labels, Annotations: inst.Spec.Annotations,
			CreationTimestamp: inst.CreationTimestamp},
		Spec:   corev1.NodeSpec{ProviderID: ProviderIDPrefix + inst.Name, Taints: inst.Spec.Taints},
		Status: corev1.NodeStatus{Capacity: inst.Spec.Capacity, Allocatable: inst.Spec.Allocatable},
	}
}
