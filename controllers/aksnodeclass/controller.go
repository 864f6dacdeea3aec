// Package aksnodeclass resolves an AKSNodeClass's node images (the latest AKS node image versions
// of its family in the cluster's region), its Kubernetes version (the control plane's) and its
// subnet into its status, validates what Joist does not support, and rolls the results into Ready.
package aksnodeclass

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
)

// Options tune the controller.
type Options struct {
	// Period between re-resolutions (new node image versions become drift). Default 1 h.
	Period time.Duration
	// RetryPeriod after a failed resolution. Default 30 s.
	RetryPeriod time.Duration
	// Location is the cluster's region.
	Location string
	// DefaultSubnetID is used when a class sets no vnetSubnetID.
	DefaultSubnetID string
	// KubernetesVersion returns the control plane's version ("1.33.2").
	KubernetesVersion func(context.Context) (string, error)
}

// Controller reconciles AKSNodeClasses.
type Controller struct {
	kube    client.Client
	images  *armcompute.CommunityGalleryImageVersionsClient
	subnets *armnetwork.SubnetsClient
	opts    Options
}

// New returns the controller.
func New(kube client.Client, images *armcompute.CommunityGalleryImageVersionsClient, subnets *armnetwork.SubnetsClient, opts Options) *Controller {
	if opts.Period == 0 {
		opts.Period = time.Hour
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = 30 * time.Second
	}
	return &Controller{kube: kube, images: images, subnets: subnets, opts: opts}
}

// +kubebuilder:rbac:groups=karpenter.azure.com,resources=aksnodeclasses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.azure.com,resources=aksnodeclasses/status,verbs=get;update;patch

// Reconcile resolves one class and writes its status in one patch.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &azv1beta1.AKSNodeClass{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := nc.DeepCopy()
	ok := true
	for _, step := range []func(context.Context, *azv1beta1.AKSNodeClass) bool{c.validate, c.localDNS, c.subnet, c.kubernetesVersion, c.resolveImages} {
		ok = step(ctx, nc) && ok
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.kube.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching AKSNodeClass %s status: %w", nc.Name, err))
		}
	}
	if !ok {
		return reconcile.Result{RequeueAfter: c.opts.RetryPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: c.opts.Period}, nil
}

// Register sets the controller up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("aksnodeclass").For(&azv1beta1.AKSNodeClass{}).Complete(c)
}

// validate refuses what Joist cannot launch as asked (rather than launching something else).
func (c *Controller) validate(_ context.Context, nc *azv1beta1.AKSNodeClass) bool {
	var problem string
	switch {
	case nc.Spec.FIPSMode != nil && *nc.Spec.FIPSMode == azv1beta1.FIPSModeFIPS:
		problem = "fipsMode FIPS is not supported by Joist (it resolves no FIPS node images); remove fipsMode or set it to Disabled"
	case nc.Spec.ArtifactStreaming != nil && nc.Spec.ArtifactStreaming.Enabled != nil && *nc.Spec.ArtifactStreaming.Enabled:
		problem = "artifactStreaming.enabled is not supported by Joist's node bootstrap; remove it"
	case nc.Spec.LinuxOSConfig != nil:
		problem = "linuxOSConfig is not supported by Joist's node bootstrap (it writes no sysctls, swap or huge-page settings); remove it"
	}
	if problem != "" {
		nc.SetCondition(azv1beta1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, "Unsupported", problem)
		return false
	}
	nc.SetCondition(azv1beta1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Validated", "")
	return true
}

// localDNS resolves the local DNS state. Joist's bootstrap does not install the local DNS, so
// Required cannot be met and Preferred resolves to Disabled.
func (c *Controller) localDNS(_ context.Context, nc *azv1beta1.AKSNodeClass) bool {
	state := azv1beta1.LocalDNSStateDisabled
	nc.Status.LocalDNSState = &state
	if nc.Spec.LocalDNS != nil && nc.Spec.LocalDNS.Mode == azv1beta1.LocalDNSModeRequired {
		nc.SetCondition(azv1beta1.ConditionTypeLocalDNSReady, metav1.ConditionFalse, "Unsupported",
			"localDNS.mode Required is not supported by Joist; use Preferred (resolves to Disabled) or Disabled")
		return false
	}
	nc.SetCondition(azv1beta1.ConditionTypeLocalDNSReady, metav1.ConditionTrue, "Resolved", "")
	return true
}

// subnet checks that the NICs' subnet exists.
func (c *Controller) subnet(ctx context.Context, nc *azv1beta1.AKSNodeClass) bool {
	id := c.opts.DefaultSubnetID
	if nc.Spec.VNETSubnetID != nil && *nc.Spec.VNETSubnetID != "" {
		id = *nc.Spec.VNETSubnetID
	}
	if id == "" {
		nc.SetCondition(azv1beta1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "SubnetNotSet",
			"no vnetSubnetID and no default subnet: set spec.vnetSubnetID or the operator's $AZURE_SUBNET_ID")
		return false
	}
	rid, err := arm.ParseResourceID(id)
	if err != nil || rid.Parent == nil {
		nc.SetCondition(azv1beta1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "SubnetInvalid", fmt.Sprintf("subnet %q is not a subnet resource ID", id))
		return false
	}
	if _, err := c.subnets.Get(ctx, rid.ResourceGroupName, rid.Parent.Name, rid.Name, nil); err != nil {
		nc.SetCondition(azv1beta1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "SubnetNotFound",
			fmt.Sprintf("getting subnet %s: %v (does it exist, and may Joist's identity read it: Network Contributor on the subnet?)", id, err))
		return false
	}
	nc.SetCondition(azv1beta1.ConditionTypeSubnetsReady, metav1.ConditionTrue, "Resolved", "")
	return true
}

func (c *Controller) kubernetesVersion(ctx context.Context, nc *azv1beta1.AKSNodeClass) bool {
	if c.opts.KubernetesVersion == nil {
		nc.SetCondition(azv1beta1.ConditionTypeKubernetesVersionReady, metav1.ConditionFalse, "Unknown", "no source of the Kubernetes version")
		return false
	}
	v, err := c.opts.KubernetesVersion(ctx)
	if err != nil || v == "" {
		nc.SetCondition(azv1beta1.ConditionTypeKubernetesVersionReady, metav1.ConditionFalse, "Unknown", fmt.Sprintf("reading the API server's version: %v", err))
		return false
	}
	nc.Status.KubernetesVersion = &v
	nc.SetCondition(azv1beta1.ConditionTypeKubernetesVersionReady, metav1.ConditionTrue, "Resolved", "")
	return true
}

func (c *Controller) resolveImages(ctx context.Context, nc *azv1beta1.AKSNodeClass) bool {
	images, err := resolveImages(ctx, c.images, c.opts.Location, nc)
	if err != nil {
		nc.SetCondition(azv1beta1.ConditionTypeImagesReady, metav1.ConditionFalse, "ImagesNotFound", err.Error())
		return false
	}
	nc.Status.Images = images
	nc.SetCondition(azv1beta1.ConditionTypeImagesReady, metav1.ConditionTrue, "Resolved", "")
	return true
}
