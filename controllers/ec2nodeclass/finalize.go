package ec2nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// Finalizer holds a deleted EC2NodeClass until no NodeClaim uses it and the AWS resources Joist
// made for it (launch templates, the instance profile of spec.role) are deleted.
const Finalizer = awsv1.Group + "/termination"

// finalize cleans up after a deleted NodeClass.
func (c *Controller) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, Finalizer) {
		return reconcile.Result{}, nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for _, claim := range claims.Items {
		if ref := claim.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass" && ref.Name == nc.Name {
			log.FromContext(ctx).V(1).Info("EC2NodeClass still in use", "ec2nodeclass", nc.Name, "nodeclaim", claim.Name)
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
	}
	if err := c.deleteLaunchTemplates(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	if nc.Spec.Role != "" && c.iam != nil {
		if err := c.deleteProfile(ctx, c.profileName(nc)); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, Finalizer)
	if err := c.kube.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer from EC2NodeClass %s: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

func (c *Controller) deleteLaunchTemplates(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	pages := ec2.NewDescribeLaunchTemplatesPaginator(c.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.NodeClassTagKey), Values: []string{nc.Name}},
		{Name: aws.String("tag:" + awsv1.ClusterTagKeyPrefix + c.opts.ClusterName), Values: []string{"owned"}},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%s", awsprovider.Explain("EC2 DescribeLaunchTemplates", err))
		}
		for _, lt := range page.LaunchTemplates {
			if _, err := c.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: lt.LaunchTemplateName}); err != nil && !isNotFoundLT(err) {
				return fmt.Errorf("deleting launch template %s: %w", aws.ToString(lt.LaunchTemplateName), err)
			}
			log.FromContext(ctx).Info("deleted launch template", "ec2nodeclass", nc.Name, "launchTemplate", aws.ToString(lt.LaunchTemplateName))
		}
	}
	return nil
}

func (c *Controller) deleteProfile(ctx context.Context, name string) error {
	out, err := c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNoSuchEntity(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s", awsprovider.Explain("IAM GetInstanceProfile "+name, err))
	}
	for _, r := range out.InstanceProfile.Roles {
		if _, err := c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !isNoSuchEntity(err) {
			return fmt.Errorf("removing role from instance profile %s: %w", name, err)
		}
	}
	if _, err := c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isNoSuchEntity(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	log.FromContext(ctx).Info("deleted instance profile", "instanceProfile", name)
	return nil
}

func isNotFoundLT(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidLaunchTemplateName.NotFoundException"
}
