package fake

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// Clients returns real SDK clients pointed at the fake, with static credentials and a retryer
// whose backoff is short enough for tests (the standard retryer all the same).
func (s *Server) Clients(ctx context.Context) (*awsprovider.Clients, error) {
	return awsprovider.NewClients(ctx, awsprovider.ClientOptions{
		Region: s.Region, Endpoint: s.URL, Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		RetryMaxAttempts: 5, RetryMaxBackoff: 20 * time.Millisecond,
	})
}

// KubernetesVersion is the version the standard fixture publishes alias AMIs for.
const KubernetesVersion = "1.37"

// The standard fixture's EKS cluster (eks:DescribeCluster).
const (
	ClusterEndpoint = "https://ABC.gr7.us-west-2.eks.amazonaws.com"
	ClusterCA       = "Q0E="
)

// Standard AMI ids of the fixture.
const (
	AL2023AMD64 = "ami-0a1023amd64"
	AL2023ARM64 = "ami-0a1023arm64"
	CustomAMI   = "ami-0c0570m"
)

// NewStandard starts a fake of us-west-2 shaped like a small EKS cluster's VPC: three zones with
// a subnet each (tagged karpenter.sh/discovery=<cluster>), a node security group, the AL2023
// EKS-optimized AMIs published in SSM for KubernetesVersion, a custom AMI, spot prices below
// on-demand, a pricing product per type and an interruption queue named "joist-interruption".
func NewStandard(cluster string) *Server {
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	types := []string{"m5.large", "m5.xlarge", "c5.large", "c5.4xlarge", "m6g.large", "g4dn.xlarge", "t3.micro"}
	s := New("us-west-2", types, zones)
	for i, z := range zones {
		s.AddSubnet(Subnet{ID: "subnet-00" + z[len(z)-1:], Zone: z, ZoneID: "usw2-az" + string(rune('1'+i)), AvailableIPs: 1000 * (i + 1),
			Tags: map[string]string{"karpenter.sh/discovery": cluster}})
	}
	s.AddSubnet(Subnet{ID: "subnet-0public", Zone: "us-west-2a", ZoneID: "usw2-az1", Tags: map[string]string{"kind": "public"}})
	s.AddSecurityGroup(SecurityGroup{ID: "sg-0node", Name: "eks-node", Tags: map[string]string{"karpenter.sh/discovery": cluster}})
	s.AddSecurityGroup(SecurityGroup{ID: "sg-0other", Name: "other"})
	s.AddImage(Image{ID: AL2023AMD64, Name: "amazon-eks-node-al2023-x86_64-standard-1.37-v20261101", Owner: "amazon", Arch: "x86_64", CreationDate: "2026-11-01T00:00:00.000Z"})
	s.AddImage(Image{ID: AL2023ARM64, Name: "amazon-eks-node-al2023-arm64-standard-1.37-v20261101", Owner: "amazon", Arch: "arm64", CreationDate: "2026-11-01T00:00:00.000Z"})
	s.AddImage(Image{ID: CustomAMI, Name: "team-golden-2026-11", Owner: "123456789012", Arch: "x86_64", CreationDate: "2026-11-15T00:00:00.000Z", Tags: map[string]string{"team": "platform"}})
	s.SetSSMParameter("/aws/service/eks/optimized-ami/"+KubernetesVersion+"/amazon-linux-2023/x86_64/standard/recommended/image_id", AL2023AMD64)
	s.SetSSMParameter("/aws/service/eks/optimized-ami/"+KubernetesVersion+"/amazon-linux-2023/arm64/standard/recommended/image_id", AL2023ARM64)
	spot := map[string]float64{"m5.large": 0.035, "m5.xlarge": 0.07, "c5.large": 0.03, "c5.4xlarge": 0.25, "m6g.large": 0.029, "g4dn.xlarge": 0.2, "t3.micro": 0.004}
	for i, z := range zones {
		for it, price := range spot {
			s.SetSpotPrice(it, z, price*(1+0.1*float64(i))) // zone a cheapest
		}
	}
	s.CreateQueue("joist-interruption")
	s.SetCluster(Cluster{Name: cluster, Endpoint: ClusterEndpoint, CAData: ClusterCA, Version: KubernetesVersion, ServiceIPv4CIDR: "10.100.0.0/16"})
	return s
}
