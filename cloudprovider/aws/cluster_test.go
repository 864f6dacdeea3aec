package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

func TestClusterDiscovery(t *testing.T) {
	s := fake.NewStandard(cluster)
	t.Cleanup(s.Close)
	ctx := context.Background()
	clients, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	d := awsprovider.NewClusterDiscovery(clients.EKS, clk, awsprovider.ClusterDiscoveryOptions{Name: cluster, TTL: time.Minute})

	// Denied first: the error names the permission; it is not cached.
	s.DenyDescribeCluster(true)
	if _, err := d.Get(ctx); err == nil || !strings.Contains(err.Error(), "allow eks:DescribeCluster on arn:aws:eks:<region>:<account>:cluster/prod") {
		t.Fatalf("denied Get = %v, want an error naming eks:DescribeCluster", err)
	}
	s.DenyDescribeCluster(false)
	info, err := d.Get(ctx)
	if err != nil || info.Endpoint != fake.ClusterEndpoint || info.CABundle != fake.ClusterCA || info.ServiceCIDR != "10.100.0.0/16" || info.KubernetesVersion != fake.KubernetesVersion {
		t.Fatalf("Get after the permission was granted = %+v, %v", info, err)
	}

	// Within the TTL the answer is reused; past it, refreshed (an upgrade shows up).
	s.SetCluster(fake.Cluster{Name: cluster, Endpoint: fake.ClusterEndpoint, CAData: fake.ClusterCA, Version: "1.38", IPFamily: "ipv6", ServiceIPv6CIDR: "fd00:1::/108"})
	calls := s.DescribeClusterCalls()
	if info, _ := d.Get(ctx); info.KubernetesVersion != fake.KubernetesVersion || s.DescribeClusterCalls() != calls {
		t.Errorf("within the TTL: version %s, %d calls; want the cached answer", info.KubernetesVersion, s.DescribeClusterCalls()-calls)
	}
	clk.Step(2 * time.Minute)
	info, err = d.Get(ctx)
	if err != nil || info.KubernetesVersion != "1.38" || info.ServiceCIDR != "fd00:1::/108" || !info.IPv6() || info.DNSAddress() != "fd00:1::a" {
		t.Errorf("past the TTL = %+v, %v; want the upgraded IPv6 cluster", info, err)
	}

	// A failed refresh serves the last answer and retries on the next call.
	clk.Step(2 * time.Minute)
	s.DenyDescribeCluster(true)
	if info, err := d.Get(ctx); err != nil || info.KubernetesVersion != "1.38" {
		t.Errorf("refresh failing = %+v, %v; want the last answer", info, err)
	}
	s.DenyDescribeCluster(false)
	before := s.DescribeClusterCalls()
	if _, err := d.Get(ctx); err != nil || s.DescribeClusterCalls() != before+1 {
		t.Errorf("after a failed refresh the next Get must call again (calls %d → %d)", before, s.DescribeClusterCalls())
	}

	// Flags and environment override field by field; complete overrides need no EKS at all.
	o := awsprovider.NewClusterDiscovery(clients.EKS, clk, awsprovider.ClusterDiscoveryOptions{Name: cluster, Overrides: awsprovider.ClusterInfo{ServiceCIDR: "172.20.0.0/16"}})
	if info, _ := o.Get(ctx); info.ServiceCIDR != "172.20.0.0/16" || info.Endpoint != fake.ClusterEndpoint {
		t.Errorf("override = %+v", info)
	}
	s.DenyDescribeCluster(true)
	full := awsprovider.ClusterInfo{Endpoint: "https://x.example", CABundle: "Q0E=", ServiceCIDR: "10.0.0.0/16", KubernetesVersion: "1.33"}
	if info, err := awsprovider.NewClusterDiscovery(clients.EKS, clk, awsprovider.ClusterDiscoveryOptions{Name: cluster, Overrides: full}).Get(ctx); err != nil || info != full {
		t.Errorf("complete overrides with DescribeCluster denied = %+v, %v", info, err)
	}
	if _, err := awsprovider.NewClusterDiscovery(clients.EKS, clk, awsprovider.ClusterDiscoveryOptions{Name: "nope"}).Get(ctx); err == nil {
		t.Error("unknown cluster: want an error")
	}
}
