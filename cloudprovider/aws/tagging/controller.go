// Package tagging names an EC2 instance after the Node it registered as: once a NodeClaim is
// registered, its instance gets Name=<node name> (the EC2 private DNS name, what the console and
// cost reports show) and the claim is annotated so it is done once.
package tagging

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// AnnotationTagged marks a NodeClaim whose instance carries its node name.
const AnnotationTagged = awsv1.Group + "/tagged"

// Controller tags instances of registered NodeClaims.
type Controller struct {
	kube client.Client
	ec2  *ec2.Client
}

// New returns the controller.
func New(kube client.Client, ec2c *ec2.Client) *Controller { return &Controller{kube: kube, ec2: ec2c} }

// Register sets the controller up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("aws.tagging").For(&v1.NodeClaim{}).Complete(c)
}

// Reconcile tags one claim's instance.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
	if !strings.HasPrefix(nc.Status.ProviderID, "aws:///") || !strings.HasPrefix(id, "i-") || nc.Status.NodeName == "" ||
		!nc.IsTrue(v1.ConditionTypeRegistered) || !nc.DeletionTimestamp.IsZero() || nc.Annotations[AnnotationTagged] == "true" {
		return reconcile.Result{}, nil
	}
	if _, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{
		{Key: aws.String(awsv1.NameTagKey), Value: aws.String(nc.Status.NodeName)},
		{Key: aws.String(awsv1.NodeClaimTagKey), Value: aws.String(nc.Name)},
	}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("tagging instance %s of nodeclaim %s: %w", id, nc.Name, err)
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[AnnotationTagged] = "true"
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim %s: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}
