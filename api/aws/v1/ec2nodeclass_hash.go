package v1

import (
	"encoding/json"
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EC2NodeClassHashVersion versions the EC2NodeClass hash (annotation AnnotationEC2NodeClassHashVersion).
// It is karpenter-provider-aws v1.15's version string: Joist's hash is Karpenter's, so claims either
// one stamped are judged by the other without drifting. A claim stamped with another version is
// re-stamped, not drifted.
const EC2NodeClassHashVersion = "v6"

// Hash is the NodeClass's static hash, which the NodeClass and the NodeClaims launched from it carry
// in AnnotationEC2NodeClassHash: every field that shapes an instance at launch, except the selector
// terms (their resolved subnets, security groups and AMIs are compared separately, so re-tagging a
// subnet that still selects the same one is no drift), and the kubelet configuration as its JSON.
// amiFamily is hashed as resolved, so setting it to what the alias implies is no drift either.
// caBundle is the cluster CA bundle (base64) the nodes bootstrap with.
//
// It is the value karpenter-provider-aws v1.15 computes (hashstructure v2, FormatV2,
// SlicesAsSets, IgnoreZeroValue, ZeroNil over {spec, resolved AMI family, CA bundle, kubelet
// JSON}), bit for bit; bench/upstream checks that on random classes against Karpenter's own
// EC2NodeClass.Hash. Joist's kubelet configuration is typed, so a duration in
// evictionSoftGracePeriod is hashed in Go's canonical form ("1m30s"): written otherwise ("90s")
// Karpenter hashes the literal text and the two values differ (docs/upgrade.md).
func (in *EC2NodeClass) Hash(caBundle string) string {
	h, err := hashstructure.Hash([]any{specHashInput(&in.Spec), in.AMIFamily(), caBundle, kubeletJSON(in.Spec.Kubelet)},
		hashstructure.FormatV2, &hashstructure.HashOptions{SlicesAsSets: true, IgnoreZeroValue: true, ZeroNil: true})
	if err != nil {
		panic(err) // plain data always hashes
	}
	return strconv.FormatUint(h, 10)
}

// kubeletJSON is Karpenter's KubeletConfiguration.String(): the configuration as a JSON object
// with sorted keys, or "null" when it has no field set.
func kubeletJSON(k *KubeletConfiguration) string {
	if k == nil {
		return "null"
	}
	data, err := json.Marshal(k)
	if err != nil {
		panic(err) // plain data always marshals
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &fields); err != nil {
		panic(err)
	}
	if len(fields) == 0 {
		return "null"
	}
	data, err = json.Marshal(fields) // encoding/json sorts map keys
	if err != nil {
		panic(err)
	}
	return string(data)
}

// hashedSpecFields are the EC2NodeClassSpec fields specHashInput carries; the rest are
// hash:"ignore" upstream. A test fails when a field is added to the spec without being placed here
// or in ignoredSpecFields.
var (
	hashedSpecFields  = []string{"AssociatePublicIPAddress", "UserData", "Role", "InstanceProfile", "Tags", "BlockDeviceMappings", "InstanceStorePolicy", "DetailedMonitoring", "MetadataOptions", "Context"}
	ignoredSpecFields = []string{"SubnetSelectorTerms", "SecurityGroupSelectorTerms", "AMISelectorTerms", "AMIFamily", "Kubelet"}
)

// specHashInput converts the spec into a mirror of Karpenter's EC2NodeClassSpec. hashstructure
// hashes a struct by its type name and its exported fields' names, order and values, so these
// types are named, ordered, typed and tagged as karpenter-provider-aws's (v1.15) pkg/apis/v1.
// Fields hash:"ignore" upstream are not carried; fields Joist does not have (placement group,
// network interfaces, enclave, connection tracking and CPU options) are zero, which
// IgnoreZeroValue skips as it does upstream when they are unset.
func specHashInput(s *EC2NodeClassSpec) any {
	type BlockDevice struct {
		DeleteOnTermination *bool
		Encrypted           *bool
		IOPS                *int64
		KMSKeyID            *string
		SnapshotID          *string
		Throughput          *int64
		VolumeSize          *resource.Quantity `hash:"string"`
		VolumeType          *string
	}
	type BlockDeviceMapping struct {
		DeviceName *string
		EBS        *BlockDevice
		RootVolume bool
	}
	type MetadataOptions struct {
		HTTPEndpoint            *string
		HTTPProtocolIPv6        *string
		HTTPPutResponseHopLimit *int64
		HTTPTokens              *string
	}
	type EC2NodeClassSpec struct {
		AssociatePublicIPAddress *bool
		UserData                 *string
		Role                     string
		InstanceProfile          *string
		Tags                     map[string]string
		BlockDeviceMappings      []*BlockDeviceMapping
		InstanceStorePolicy      *string
		DetailedMonitoring       *bool
		MetadataOptions          *MetadataOptions
		Context                  *string
	}
	out := EC2NodeClassSpec{
		AssociatePublicIPAddress: s.AssociatePublicIPAddress,
		UserData:                 s.UserData,
		Role:                     s.Role,
		InstanceProfile:          s.InstanceProfile,
		Tags:                     s.Tags,
		InstanceStorePolicy:      s.InstanceStorePolicy,
		DetailedMonitoring:       s.DetailedMonitoring,
		Context:                  s.Context,
	}
	if m := s.MetadataOptions; m != nil {
		out.MetadataOptions = &MetadataOptions{HTTPEndpoint: m.HTTPEndpoint, HTTPProtocolIPv6: m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit, HTTPTokens: m.HTTPTokens}
	}
	if s.BlockDeviceMappings != nil {
		out.BlockDeviceMappings = make([]*BlockDeviceMapping, len(s.BlockDeviceMappings))
	}
	for i, bdm := range s.BlockDeviceMappings {
		if bdm == nil {
			continue
		}
		m := &BlockDeviceMapping{DeviceName: bdm.DeviceName, RootVolume: bdm.RootVolume}
		if e := bdm.EBS; e != nil {
			m.EBS = &BlockDevice{DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, IOPS: e.IOPS,
				KMSKeyID: e.KMSKeyID, SnapshotID: e.SnapshotID, Throughput: e.Throughput, VolumeSize: e.VolumeSize, VolumeType: e.VolumeType}
		}
		out.BlockDeviceMappings[i] = m
	}
	return out
}
