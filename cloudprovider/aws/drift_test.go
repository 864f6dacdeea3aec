package aws_test

import (
	"context"
	"testing"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

func TestDrift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(w *world, nc *awsv1.EC2NodeClass)
		want   cloudprovider.DriftReason
	}{
		{name: "unchanged", change: func(*world, *awsv1.EC2NodeClass) {}, want: ""},
		{name: "tags changed (static hash)", change: func(_ *world, nc *awsv1.EC2NodeClass) { nc.Spec.Tags["team"] = "data" }, want: awsprovider.DriftNodeClass},
		{name: "userData changed", change: func(_ *world, nc *awsv1.EC2NodeClass) { nc.Spec.UserData = ptrTo("echo hi") }, want: awsprovider.DriftNodeClass},
		{name: "subnet selector re-worded, same subnets", change: func(_ *world, nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "*"}}}
		}, want: ""},
		{name: "amiFamily set to what the alias implies", change: func(_ *world, nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = ptrTo(awsv1.AMIFamilyAL2023)
		}, want: ""},
		{name: "new AMI released", change: func(w *world, _ *awsv1.EC2NodeClass) {
			w.aws.AddImage(fake.Image{ID: "ami-0new", Name: "al2023-new", Owner: "amazon", Arch: "x86_64", CreationDate: "2026-11-20T00:00:00.000Z"})
			w.aws.SetSSMParameter("/aws/service/eks/optimized-ami/"+fake.KubernetesVersion+"/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-0new")
		}, want: awsprovider.DriftAMI},
		{name: "subnet no longer selected", change: func(w *world, _ *awsv1.EC2NodeClass) { w.aws.RemoveSubnet("subnet-00a") }, want: awsprovider.DriftSubnet},
		{name: "security group no longer selected", change: func(w *world, _ *awsv1.EC2NodeClass) {
			w.aws.AddSecurityGroup(fake.SecurityGroup{ID: "sg-0new", Name: "new", Tags: map[string]string{"karpenter.sh/discovery": cluster}})
			w.aws.RemoveSecurityGroup("sg-0node")
		}, want: awsprovider.DriftSecurityGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.apply(t, nodeClass("default"))
			ctx := context.Background()
			// Pin the launch to zone a so that removing subnet-00a drifts it.
			launched, err := w.provider.Create(ctx, claim("d", req(v1.CapacityTypeLabelKey, "In", "on-demand"), req(v1.LabelTopologyZone, "In", "us-west-2a"), req(v1.LabelArch, "In", "amd64")))
			if err != nil {
				t.Fatal(err)
			}
			nc := &awsv1.EC2NodeClass{}
			if err := w.kube.Get(ctx, clientKey("default"), nc); err != nil {
				t.Fatal(err)
			}
			tc.change(w, nc)
			if err := w.kube.Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
			w.reconcile(t, "default")
			got, err := w.provider.IsDrifted(ctx, launched)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("IsDrifted = %q, want %q", got, tc.want)
			}
		})
	}
}
