package ec2nodeclass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// instanceProfile resolves the profile instances launch with: spec.instanceProfile as given, or
// for spec.role one Joist manages, named <cluster>_<hash of region and NodeClass>, created and
// tagged for the cluster on first use and holding the role (replacing a role changed since).
func (c *Controller) instanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	if nc.Spec.InstanceProfile != nil {
		nc.Status.InstanceProfile = *nc.Spec.InstanceProfile
		nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, "InstanceProfileReady", "")
		return true
	}
	if c.iam == nil {
		nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, "RoleNotSupported",
			fmt.Sprintf("spec.role %q needs an IAM client to manage an instance profile; set spec.instanceProfile instead", nc.Spec.Role))
		return false
	}
	name := c.profileName(nc)
	if err := c.ensureProfile(ctx, nc, name); err != nil {
		nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, "InstanceProfileFailed", err.Error())
		return false
	}
	nc.Status.InstanceProfile = name
	nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, "InstanceProfileReady", "")
	return true
}

func (c *Controller) profileName(nc *awsv1.EC2NodeClass) string {
	h := sha256.Sum256([]byte(c.opts.Region + "/" + nc.Name))
	return c.opts.ClusterName + "_" + hex.EncodeToString(h[:8])
}

func (c *Controller) ensureProfile(ctx context.Context, nc *awsv1.EC2NodeClass, name string) error {
	var profile *iamtypes.InstanceProfile
	out, err := c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	switch {
	case err == nil:
		profile = out.InstanceProfile
	case isNoSuchEntity(err):
		created, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name), Path: aws.String("/"),
			Tags: []iamtypes.Tag{
				{Key: aws.String(awsv1.ClusterTagKeyPrefix + c.opts.ClusterName), Value: aws.String("owned")},
				{Key: aws.String(awsv1.EKSClusterNameTagKey), Value: aws.String(c.opts.ClusterName)},
				{Key: aws.String(awsv1.NodeClassTagKey), Value: aws.String(nc.Name)},
				{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String(c.opts.Region)},
			},
		})
		if err != nil {
			return fmt.Errorf("%s", awsprovider.Explain("IAM CreateInstanceProfile "+name, err))
		}
		profile = created.InstanceProfile
	default:
		return fmt.Errorf("%s", awsprovider.Explain("IAM GetInstanceProfile "+name, err))
	}
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == nc.Spec.Role {
			return nil
		}
		if _, err := c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil {
			return fmt.Errorf("%s", awsprovider.Explain("IAM RemoveRoleFromInstanceProfile "+name, err))
		}
	}
	if _, err := c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(nc.Spec.Role)}); err != nil {
		return fmt.Errorf("%s (does role %s exist, and may Joist pass it?)", awsprovider.Explain("IAM AddRoleToInstanceProfile "+name, err), nc.Spec.Role)
	}
	return nil
}

func isNoSuchEntity(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchEntity"
}
