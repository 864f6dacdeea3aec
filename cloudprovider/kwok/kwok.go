// Package kwok is Joist's simulated cloud: launching an instance writes a Node that the KWOK process
// (managing nodes annotated kwok.x-k8s.io/node=fake) turns Ready and runs pods on. An instance with a
// registration delay is recorded as a KWOKInstance until its Node is due, so that, as with a real
// cloud, what was launched survives a manager crash; the provider is a manager Runnable that
// registers them. Instance types come
// from the solver's catalog; failures can be injected for tests.
package kwok

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

const (
	// ProviderIDPrefix starts every KWOK provider ID: kwok://<node name>.
	ProviderIDPrefix = "kwok://"
	// ManagedLabelKey marks Nodes this provider launched (its instance inventory).
	ManagedLabelKey = "kwok.joist.dev/instance"
	// ImageIDAnnotationKey records the image the node was launched with.
	ImageIDAnnotationKey = "kwok.joist.dev/image-id"

	kwokNodeAnnotation      = "kwok.x-k8s.io/node"
	kwokNodeAnnotationValue = "fake"
)

// Options configure the simulated cloud.
type Options struct {
	// InstanceTypes the cloud offers (usually the solver catalog).
	InstanceTypes []*catalog.InstanceType
	// ErrorRate is the fraction (0–1) of launches that fail with a transient error.
	ErrorRate float64
	// UnavailableOfferings always fail with insufficient capacity, as a sold-out zone would.
	UnavailableOfferings []cloudprovider.UnavailableOffering
	// Seed makes failure injection reproducible.
	Seed int64
	// Faults are further injected failures (terminations, latency).
	Faults Faults
}

// CloudProvider is the KWOK cloud.
type CloudProvider struct {
	kube        client.Client
	opts        Options
	unavailable *cloudprovider.UnavailableOfferings
	soldOut     map[cloudprovider.UnavailableOffering]bool

	// written keeps, by name and for launchedNodeMemory, each Node a launch just wrote as the
	// apiserver returned it, until the NodeClaim lifecycle takes it (WrittenNode).
	written *cache.Expiring

	mu  sync.Mutex
	rng *rand.Rand
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a KWOK cloud writing Nodes through kube.
func New(kube client.Client, unavailable *cloudprovider.UnavailableOfferings, opts Options) *CloudProvider {
	soldOut := map[cloudprovider.UnavailableOffering]bool{}
	for _, o := range opts.UnavailableOfferings {
		soldOut[o] = true
	}
	return &CloudProvider{
		kube: kube, opts: opts, unavailable: unavailable, soldOut: soldOut,
		rng: rand.New(rand.NewSource(opts.Seed)), written: cache.NewExpiring(),
	}
}

// launchedNodeMemory bounds how long a written Node waits for the lifecycle to take it.
const launchedNodeMemory = time.Minute

// WrittenNode returns, once, the Node a launch in this process just wrote under name, as the
// apiserver returned it, or nil. The NodeClaim lifecycle registers it in the launch's own reconcile
// from this copy instead of reading it back from the apiserver: one round trip fewer per launch on
// a lifecycle worker (the cache does not show the Node yet).
func (c *CloudProvider) WrittenNode(name string) *corev1.Node {
	n, ok := c.written.Get(name)
	if !ok {
		return nil
	}
	c.written.Delete(name)
	return n.(*corev1.Node)
}

// Name is "kwok".
func (c *CloudProvider) Name() string { return "kwok" }

// Create launches the cheapest available offering compatible with the claim's requirements, trying
// the next-cheapest when an offering is sold out. A Node already launched for the claim is adopted.
func (c *CloudProvider) Create(ctx context.Context, nc *v1.NodeClaim) (_ *v1.NodeClaim, err error) {
	done := c.call(ctx, "Create")
	defer func() { done(err) }()
	if existing, err := c.Get(ctx, ProviderIDPrefix+nc.Name); err == nil {
		return existing, nil
	} else if !cloudprovider.IsNodeClaimNotFoundError(err) {
		return nil, err
	}
	if c.injectFailure() {
		return nil, fmt.Errorf("kwok: injected launch failure (error rate %.0f%%)", c.opts.ErrorRate*100)
	}
	nodeClass, err := c.nodeClass(ctx, nc)
	if err != nil {
		return nil, err
	}
	var tried []cloudprovider.UnavailableOffering
	for _, l := range cloudprovider.LaunchOptions(nc.Spec.Requirements, c.opts.InstanceTypes, c.unavailable) {
		if c.soldOutNow(l.Key(), nodeClass) {
			c.unavailable.MarkUnavailable(l.Key())
			tried = append(tried, l.Key())
			log.FromContext(ctx).V(1).Info("offering sold out, trying the next-cheapest",
				"instanceType", l.InstanceType.Name, "zone", l.Offering.Zone, "capacityType", l.Offering.CapacityType)
			continue
		}
		node := c.nodeFor(nc, l, nodeClass)
		launched, err := c.register(ctx, node, nodeClass)
		if err != nil {
			return nil, err
		}
		out := claimFromNode(nc, launched)
		if launched.UID != "" { // created now, not booting: name it, the lifecycle registers it at once
			out.Status.NodeName = launched.Name
			launched.ManagedFields = nil // as the cache keeps it; the lifecycle patches against it
			c.written.Set(launched.Name, launched, launchedNodeMemory)
		}
		return out, nil
	}
	return nil, &cloudprovider.InsufficientCapacityError{
		Err:       fmt.Errorf("no available offering satisfies the requirements of %s", nc.Name),
		Offerings: tried,
	}
}

func (c *CloudProvider) injectFailure() bool {
	if c.opts.ErrorRate <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64() < c.opts.ErrorRate
}

var nodeClassKind = cloudprovider.NodeClassKind{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass"}

func (c *CloudProvider) nodeClass(ctx context.Context, nc *v1.NodeClaim) (*kwokv1alpha1.KWOKNodeClass, error) {
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := cloudprovider.GetClaimNodeClass(ctx, c.kube, nodeClassKind, nc, nodeClass); err != nil {
		return nil, err
	}
	return nodeClass, nil
}

// nodeFor builds the Node a launch of l for nc registers as.
func (c *CloudProvider) nodeFor(nc *v1.NodeClaim, l cloudprovider.Launchable, nodeClass *kwokv1alpha1.KWOKNodeClass) *corev1.Node {
	labels := map[string]string{}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	for k, v := range l.Labels() {
		labels[k] = v
	}
	labels[v1.LabelHostname] = nc.Name
	labels[ManagedLabelKey] = l.InstanceType.Name
	taints := append(append([]corev1.Taint{}, nc.Spec.Taints...), nc.Spec.StartupTaints...)
	taints = append(taints, v1.UnregisteredNoExecuteTaint)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   nc.Name,
			Labels: labels,
			Annotations: map[string]string{
				kwokNodeAnnotation:   kwokNodeAnnotationValue,
				ImageIDAnnotationKey: nodeClass.Spec.ImageID,
			},
		},
		Spec: corev1.NodeSpec{ProviderID: ProviderIDPrefix + nc.Name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    l.InstanceType.Capacity.DeepCopy(),
			Allocatable: l.InstanceType.Allocatable(),
		},
	}
}

// claimFromNode returns nc as launched on node.
func claimFromNode(nc *v1.NodeClaim, node *corev1.Node) *v1.NodeClaim {
	out := nc.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for _, k := range []string{v1.LabelInstanceType, v1.LabelTopologyZone, v1.CapacityTypeLabelKey, v1.LabelArch, v1.LabelOS} {
		if v, ok := node.Labels[k]; ok {
			out.Labels[k] = v
		}
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.ImageID = node.Annotations[ImageIDAnnotationKey]
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return out
}

// Delete terminates the instance: the Node is deleted (its finalizers still run).
func (c *CloudProvider) Delete(ctx context.Context, nc *v1.NodeClaim) (err error) {
	done := c.call(ctx, "Delete")
	defer func() { done(err) }()
	if err := c.injectDeleteFailure(); err != nil {
		return err
	}
	name := strings.TrimPrefix(nc.Status.ProviderID, ProviderIDPrefix)
	if name == "" {
		name = nc.Name
	}
	// A booting instance may be registering right now: terminate the record, then any Node too.
	terminated, err := c.terminateBooting(ctx, name)
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			if terminated {
				return nil
			}
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("kwok instance %s", name))
		}
		return fmt.Errorf("getting node %s: %w", name, err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("kwok instance %s is terminating", name))
	}
	if err := c.kube.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// Get returns the instance with providerID; instances whose Node is being deleted are gone.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (_ *v1.NodeClaim, err error) {
	done := c.call(ctx, "Get")
	defer func() { done(err) }()
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok || name == "" {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("provider id %q is not a kwok id", providerID))
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting node %s: %w", name, err)
		}
		if booting, err := c.booting(ctx, name); err != nil || booting != nil {
			if booting != nil {
				return instanceClaim(booting), nil
			}
			return nil, err
		}
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("kwok instance %s", name))
	}
	if _, managed := node.Labels[ManagedLabelKey]; !managed || !node.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("kwok instance %s", name))
	}
	return instanceClaim(node), nil
}

// List returns every running instance.
func (c *CloudProvider) List(ctx context.Context) (_ []*v1.NodeClaim, err error) {
	done := c.call(ctx, "List")
	defer func() { done(err) }()
	// Read only (claimFromNode copies what it keeps): a deep copy of every node each garbage
	// collection sweep was 29 MB of the heap at the 5,000-node peak of make bench-scale.
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, client.HasLabels{ManagedLabelKey}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing kwok nodes: %w", err)
	}
	var out []*v1.NodeClaim
	seen := map[string]bool{}
	for i := range nodes.Items {
		seen[nodes.Items[i].Name] = true
		if nodes.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, instanceClaim(&nodes.Items[i]))
		}
	}
	booting, err := c.listBooting(ctx)
	if err != nil {
		return nil, err
	}
	for _, node := range booting {
		if !seen[node.Name] {
			out = append(out, instanceClaim(node))
		}
	}
	return out, nil
}

// instanceClaim describes a running instance as a NodeClaim (name = the claim it was launched for).
func instanceClaim(node *corev1.Node) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: node.Name, CreationTimestamp: node.CreationTimestamp}}
	return claimFromNode(nc, node)
}

// GetInstanceTypes returns the catalog with offerings recently sold out marked unavailable.
func (c *CloudProvider) GetInstanceTypes(_ context.Context, _ *v1.NodePool) ([]*catalog.InstanceType, error) {
	out := make([]*catalog.InstanceType, 0, len(c.opts.InstanceTypes))
	for _, it := range c.opts.InstanceTypes {
		cp := *it
		cp.Offerings = append([]catalog.Offering(nil), it.Offerings...)
		for i, o := range cp.Offerings {
			key := cloudprovider.UnavailableOffering{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if c.unavailable.IsUnavailable(key) {
				cp.Offerings[i].Available = false
			}
		}
		out = append(out, &cp)
	}
	return out, nil
}

// IsDrifted reports ImageDrifted when the NodeClass's image differs from the instance's.
func (c *CloudProvider) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nodeClass, err := c.nodeClass(ctx, nc)
	if err != nil {
		return "", err
	}
	if nc.Status.ImageID != "" && nc.Status.ImageID != nodeClass.Spec.ImageID {
		return "ImageDrifted", nil
	}
	return "", nil
}
