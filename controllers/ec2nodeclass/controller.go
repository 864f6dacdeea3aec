// Package ec2nodeclass resolves an EC2NodeClass's selector terms against EC2 and SSM (subnets,
// security groups, AMIs, instance profile) into its status, and rolls the results into Ready. A
// failed lookup sets its condition False with a message that says what to fix, including the
// private-cluster case where the AWS APIs are unreachable for want of VPC endpoints.
package ec2nodeclass

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

// Options tune the controller.
type Options struct {
	// Period between re-resolutions (new AMI releases, re-tagged subnets). Default 5 m.
	Period time.Duration
	// RetryPeriod after a failed resolution. Default 30 s.
	RetryPeriod time.Duration
	// KubernetesVersion returns the cluster's minor version ("1.33"), for alias AMIs.
	KubernetesVersion func(context.Context) (string, error)
	// Now is the time AMI deprecation times are compared with (default time.Now).
	Now func() time.Time
	// ClusterName and Region name and tag the instance profiles managed for spec.role.
	ClusterName, Region string
	// ClusterCABundle (base64) is part of the NodeClass hash stamped on it (see stampHash).
	ClusterCABundle string
}

// Controller reconciles EC2NodeClasses.
type Controller struct {
	kube client.Client
	ec2  *ec2.Client
	ssm  *ssm.Client
	iam  *iam.Client // nil: spec.role is not supported
	opts Options
}

// New returns the controller.
func New(kube client.Client, ec2c *ec2.Client, ssmc *ssm.Client, iamc *iam.Client, opts Options) *Controller {
	if opts.Period == 0 {
		opts.Period = 5 * time.Minute
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = 30 * time.Second
	}
	return &Controller{kube: kube, ec2: ec2c, ssm: ssmc, iam: iamc, opts: opts}
}

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/status,verbs=get;update;patch

// Reconcile resolves one NodeClass and writes its status in one patch.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, Finalizer) || !hashStamped(nc, c.opts.ClusterCABundle) {
		stored := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, Finalizer)
		stampHash(nc, c.opts.ClusterCABundle)
		if err := c.kube.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer and hash to EC2NodeClass %s: %w", nc.Name, err))
		}
	}
	stored := nc.DeepCopy()
	ok := true
	for _, step := range []func(context.Context, *awsv1.EC2NodeClass) bool{c.subnets, c.securityGroups, c.amis, c.instanceProfile, validate} {
		ok = step(ctx, nc) && ok
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.kube.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching EC2NodeClass %s status: %w", nc.Name, err))
		}
	}
	if !ok {
		return reconcile.Result{RequeueAfter: c.opts.RetryPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: c.opts.Period}, nil
}

// Register sets the controller up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("ec2nodeclass").For(&awsv1.EC2NodeClass{}).Complete(c)
}

// validate checks what CEL cannot: that kubelet reservations and thresholds are quantities.
func validate(_ context.Context, nc *awsv1.EC2NodeClass) bool {
	s := ec2data.DefaultSettings()
	if k := nc.Spec.Kubelet; k != nil {
		s.KubeReserved, s.SystemReserved, s.EvictionHard = k.KubeReserved, k.SystemReserved, k.EvictionHard
	}
	info := ec2data.Lookup("m5.large")
	if _, err := ec2data.Build(info, s); err != nil {
		nc.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, "InvalidKubeletConfiguration", "spec.kubelet: "+err.Error())
		return false
	}
	if family := nc.AMIFamily(); strings.HasPrefix(family, "Windows") {
		nc.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, "UnsupportedAMIFamily",
			fmt.Sprintf("amiFamily %s is not supported by Joist yet: use AL2023, AL2, Bottlerocket or Custom", family))
		return false
	}
	nc.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "ValidationSucceeded", "")
	return true
}
