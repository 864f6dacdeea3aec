// Package ec2nodeclasshash checks Joist's EC2NodeClass hash against karpenter-provider-aws's own
// (a package of its own so that the NodePool check in bench/upstream builds without the AWS SDK).
package ec2nodeclasshash

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	upawsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
)

// TestEC2NodeClassHashIsKarpenters: for random EC2NodeClasses over every field Joist's type has,
// Joist's EC2NodeClass.Hash equals karpenter-provider-aws v1.15's, for the same CA bundle, with the
// same hash version. Both sides read the same JSON.
func TestEC2NodeClassHashIsKarpenters(t *testing.T) {
	if awsv1.EC2NodeClassHashVersion != upawsv1.EC2NodeClassHashVersion {
		t.Fatalf("hash version %q, Karpenter's %q", awsv1.EC2NodeClassHashVersion, upawsv1.EC2NodeClassHashVersion)
	}
	r := rand.New(rand.NewSource(1919))
	distinct := map[string]bool{}
	for i := range hashCases {
		data, err := json.Marshal(randomEC2NodeClass(r))
		if err != nil {
			t.Fatal(err)
		}
		joist, upstream := &awsv1.EC2NodeClass{}, &upawsv1.EC2NodeClass{}
		if err := json.Unmarshal(data, joist); err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, data)
		}
		if err := json.Unmarshal(data, upstream); err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, data)
		}
		ca := pick(r, []string{"", "LS0tLS1CRUdJTi1DRVJUSUZJQ0FURS0tLS0t", "Y2EtYnVuZGxlLTI="})
		got, want := joist.Hash(ca), upstream.Hash(&ca)
		if got != want {
			t.Fatalf("case %d (CA %q): Joist's hash %s, Karpenter's %s for\n%s", i, ca, got, want, data)
		}
		distinct[got] = true
	}
	if len(distinct) < hashCases*9/10 {
		t.Errorf("only %d distinct hashes in %d random classes", len(distinct), hashCases)
	}
}

const hashCases = 10000

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

func randomStringMap(r *rand.Rand) map[string]string {
	switch r.Intn(4) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + r.Intn(4) {
		m[pick(r, []string{"team", "example.com/tier", "cost-center", "owner"})] = pick(r, []string{"", "a", "b", "platform"})
	}
	return m
}

func maybe[T any](r *rand.Rand, xs ...T) *T {
	if r.Intn(3) == 0 {
		return nil
	}
	return ptr.To(pick(r, xs))
}

func randomKubelet(r *rand.Rand) *awsv1.KubeletConfiguration {
	if r.Intn(3) == 0 {
		return nil
	}
	k := &awsv1.KubeletConfiguration{
		MaxPods:                     maybe[int32](r, 8, 29, 110, 234),
		PodsPerCore:                 maybe[int32](r, 0, 4, 10),
		EvictionMaxPodGracePeriod:   maybe[int32](r, 30, 60),
		ImageGCHighThresholdPercent: maybe[int32](r, 85, 90),
		ImageGCLowThresholdPercent:  maybe[int32](r, 70, 80),
		CPUCFSQuota:                 maybe(r, true, false),
	}
	if r.Intn(2) == 0 {
		k.ClusterDNS = []string{pick(r, []string{"10.100.0.10", "172.20.0.10"}), "169.254.20.10"}[:1+r.Intn(2)]
	}
	res := func() map[string]string {
		if r.Intn(2) == 0 {
			return nil
		}
		return map[string]string{"cpu": pick(r, []string{"100m", "250m", "1"}), "memory": pick(r, []string{"100Mi", "1Gi", "512Mi"})}
	}
	k.SystemReserved, k.KubeReserved = res(), res()
	if r.Intn(2) == 0 {
		k.EvictionHard = map[string]string{"memory.available": pick(r, []string{"100Mi", "5%"}), "nodefs.available": "10%"}
	}
	if r.Intn(3) == 0 {
		k.EvictionSoft = map[string]string{"memory.available": "500Mi"}
		k.EvictionSoftGracePeriod = map[string]metav1.Duration{"memory.available": {Duration: time.Duration(1+r.Intn(300)) * time.Second}}
	}
	return k
}

// randomEC2NodeClass sets every field of Joist's EC2NodeClassSpec at random, the ignored ones too
// (selector terms, amiFamily through the alias).
func randomEC2NodeClass(r *rand.Rand) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("class-%d", r.Intn(100))},
	}
	s := &nc.Spec
	s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": pick(r, []string{"a", "b"})}}}
	s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: pick(r, []string{"sg-1", "sg-2"})}}
	if r.Intn(2) == 0 {
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: pick(r, []string{"al2023@latest", "al2023@v20240625", "bottlerocket@latest", "al2@latest", "windows2022@latest"})}}
		if r.Intn(4) == 0 {
			s.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
		}
	} else {
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123"}, {Tags: map[string]string{"k": "v"}, Owner: "self"}}
		s.AMIFamily = ptr.To(pick(r, []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom, awsv1.AMIFamilyAL2}))
	}
	s.AssociatePublicIPAddress = maybe(r, true, false)
	s.UserData = maybe(r, "", "#!/bin/bash\necho hi", "[settings.kubernetes]\nmax-pods = 10")
	if r.Intn(3) == 0 {
		s.InstanceProfile = ptr.To(pick(r, []string{"profile-a", "profile-b"}))
	} else {
		s.Role = pick(r, []string{"KarpenterNodeRole-a", "KarpenterNodeRole-b"})
	}
	s.Tags = randomStringMap(r)
	s.Kubelet = randomKubelet(r)
	for range r.Intn(3) {
		bdm := &awsv1.BlockDeviceMapping{DeviceName: maybe(r, "/dev/xvda", "/dev/xvdb"), RootVolume: r.Intn(2) == 0}
		if r.Intn(4) != 0 {
			bdm.EBS = &awsv1.BlockDevice{
				DeleteOnTermination: maybe(r, true, false), Encrypted: maybe(r, true, false),
				IOPS: maybe[int64](r, 3000, 16000), KMSKeyID: maybe(r, "arn:aws:kms:key/1"), SnapshotID: maybe(r, "snap-1"),
				Throughput: maybe[int64](r, 125, 1000), VolumeType: maybe(r, "gp3", "io2"),
			}
			if r.Intn(4) != 0 {
				q := resource.MustParse(pick(r, []string{"20Gi", "100Gi", "1Ti", "50G"}))
				bdm.EBS.VolumeSize = &q
			}
		}
		s.BlockDeviceMappings = append(s.BlockDeviceMappings, bdm)
	}
	s.InstanceStorePolicy = maybe(r, "RAID0")
	s.DetailedMonitoring = maybe(r, true, false)
	if r.Intn(4) != 0 {
		s.MetadataOptions = &awsv1.MetadataOptions{
			HTTPEndpoint: maybe(r, "enabled", "disabled"), HTTPProtocolIPv6: maybe(r, "enabled", "disabled"),
			HTTPPutResponseHopLimit: maybe[int64](r, 1, 2), HTTPTokens: maybe(r, "required", "optional"),
		}
	}
	s.Context = maybe(r, "ctx-1")
	return nc
}
