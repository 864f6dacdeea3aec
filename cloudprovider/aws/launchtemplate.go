package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// launchTemplates creates launch templates on demand. A template's name is a hash of its content
// (NodeClass static hash, AMI, security groups, instance profile, user data), so a changed input
// makes a new template and an unchanged one is reused across claims and restarts.
type launchTemplates struct {
	ec2 *ec2.Client

	mu    sync.Mutex
	known map[string]bool
}

// launchTemplateInput is everything a template holds.
type launchTemplateInput struct {
	nodeClass       *awsv1.EC2NodeClass
	amiID           string
	userData        string
	securityGroups  []string
	instanceProfile string
	// tags go on the template and, through its TagSpecifications, on the network interface (and
	// the spot request) every launch from it creates: the cluster, NodePool and NodeClass tags a
	// scoped IAM policy conditions on (resourceTags).
	tags map[string]string
	// capacityType is spot or on-demand: only a spot template tags spot requests.
	capacityType string
}

func (in launchTemplateInput) name() string {
	sgs := append([]string(nil), in.securityGroups...)
	sort.Strings(sgs)
	var tags []string
	for _, t := range ec2Tags(in.tags) {
		tags = append(tags, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
	}
	// The CA bundle is in the user data, so the hash leaves it out.
	h := sha256.Sum256([]byte(strings.Join([]string{in.nodeClass.Hash(""), in.amiID, strings.Join(sgs, ","), in.instanceProfile, in.userData,
		strings.Join(tags, ","), in.capacityType}, "\n")))
	return "joist/" + hex.EncodeToString(h[:10])
}

// ensure returns the name of a template for in, creating it if needed.
func (l *launchTemplates) ensure(ctx context.Context, in launchTemplateInput) (string, error) {
	name := in.name()
	l.mu.Lock()
	known := l.known[name]
	l.mu.Unlock()
	if known {
		return name, nil
	}
	_, err := l.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil:
	case isNotFound(err):
		if _, err := l.ec2.CreateLaunchTemplate(ctx, l.createInput(name, in)); err != nil && apiCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
			return "", fmt.Errorf("creating launch template %s: %w", name, err)
		}
	default:
		return "", fmt.Errorf("describing launch template %s: %w", name, err)
	}
	l.mu.Lock()
	l.known[name] = true
	l.mu.Unlock()
	return name, nil
}

// forget drops what is known to exist, so the next launch checks again.
func (l *launchTemplates) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known = map[string]bool{}
}

func (l *launchTemplates) createInput(name string, in launchTemplateInput) *ec2.CreateLaunchTemplateInput {
	nc := in.nodeClass
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(in.amiID),
		UserData:            aws.String(in.userData),
		SecurityGroupIds:    in.securityGroups,
		IamInstanceProfile:  &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(in.instanceProfile)},
		BlockDeviceMappings: blockDevices(nc),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(nc.Spec.DetailedMonitoring))},
		MetadataOptions:     metadataOptions(nc.Spec.MetadataOptions),
	}
	if nc.Spec.AssociatePublicIPAddress != nil {
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: nc.Spec.AssociatePublicIPAddress, Groups: in.securityGroups,
		}}
		data.SecurityGroupIds = nil // given on the interface instead
	}
	tags := ec2Tags(in.tags)
	data.TagSpecifications = []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags}}
	if in.capacityType == v1.CapacityTypeSpot {
		data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: tags})
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	}
}

func metadataOptions(m *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint: ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled, HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired,
		HttpPutResponseHopLimit: aws.Int32(1), HttpProtocolIpv6: ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		// Disabled whatever the account's default: an instance whose IMDS serves tags fails to
		// start when tag keys hold characters IMDS paths cannot (kubernetes.io/cluster/<name>).
		InstanceMetadataTags: ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = aws.Int32(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	return out
}

// blockDevices are the NodeClass's mappings, or the AMI family's default root volume (20 GiB gp3,
// encrypted; Bottlerocket: a 4 GiB OS volume and a 20 GiB data volume).
func blockDevices(nc *awsv1.EC2NodeClass) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	bdms := nc.Spec.BlockDeviceMappings
	if len(bdms) == 0 {
		gp3, size20 := "gp3", resource.MustParse("20Gi")
		root := &awsv1.BlockDeviceMapping{DeviceName: aws.String("/dev/xvda"), RootVolume: true,
			EBS: &awsv1.BlockDevice{VolumeSize: &size20, VolumeType: &gp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}
		bdms = []*awsv1.BlockDeviceMapping{root}
		if nc.AMIFamily() == awsv1.AMIFamilyBottlerocket {
			size4 := resource.MustParse("4Gi")
			os := &awsv1.BlockDeviceMapping{DeviceName: aws.String("/dev/xvda"),
				EBS: &awsv1.BlockDevice{VolumeSize: &size4, VolumeType: &gp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}
			root.DeviceName = aws.String("/dev/xvdb")
			bdms = []*awsv1.BlockDeviceMapping{os, root}
		}
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, b := range bdms {
		if b == nil {
			continue
		}
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
			}
			if e.IOPS != nil {
				ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.VolumeSize != nil {
				ebs.VolumeSize = aws.Int32(int32((e.VolumeSize.Value() + 1<<30 - 1) >> 30)) // GiB, rounded up
			}
			if e.VolumeType != nil {
				ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			m.Ebs = ebs
		}
		out = append(out, m)
	}
	return out
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Tag, len(keys))
	for i, k := range keys {
		out[i] = ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])}
	}
	return out
}
