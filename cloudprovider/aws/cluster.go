package aws

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"
)

// ClusterInfo is what a node needs to know about its EKS cluster to join it.
type ClusterInfo struct {
	// Endpoint of the API server (https://…).
	Endpoint string
	// CABundle is the cluster CA, base64 PEM as EKS returns it.
	CABundle string
	// ServiceCIDR is the cluster's service CIDR (IPv4 or IPv6); nodeadm derives the DNS address from it.
	ServiceCIDR string
	// KubernetesVersion is the control plane's minor version ("1.33").
	KubernetesVersion string
}

// IPv6 reports whether the cluster's services are IPv6.
func (c ClusterInfo) IPv6() bool {
	p, err := netip.ParsePrefix(c.ServiceCIDR)
	return err == nil && p.Addr().Is6()
}

// DNSAddress is the kube-dns service address EKS's CoreDNS add-on takes from the service CIDR
// (x.y.z.10 for IPv4, <prefix>a for IPv6) — the value nodeadm and bootstrap.sh derive.
func (c ClusterInfo) DNSAddress() string {
	p, err := netip.ParsePrefix(c.ServiceCIDR)
	if err != nil {
		return ""
	}
	if p.Addr().Is6() {
		return p.Masked().Addr().String() + "a"
	}
	b := p.Masked().Addr().As4()
	b[3] = 10
	return netip.AddrFrom4(b).String()
}

// merged is c with every non-empty field of over replacing c's.
func (c ClusterInfo) merged(over ClusterInfo) ClusterInfo {
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&c.Endpoint, over.Endpoint}, {&c.CABundle, over.CABundle}, {&c.ServiceCIDR, over.ServiceCIDR}, {&c.KubernetesVersion, over.KubernetesVersion},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	return c
}

// complete reports whether a node can be bootstrapped with c alone.
func (c ClusterInfo) complete() bool {
	return c.Endpoint != "" && c.CABundle != "" && c.ServiceCIDR != "" && c.KubernetesVersion != ""
}

// DescribeClusterAPI is the part of the EKS client discovery uses.
type DescribeClusterAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// ClusterDiscoveryOptions configure cluster discovery.
type ClusterDiscoveryOptions struct {
	// Name of the EKS cluster.
	Name string
	// Overrides win over what DescribeCluster answers, field by field (flags and environment).
	Overrides ClusterInfo
	// TTL is how long an answer is reused (default 10 m). Errors are never reused.
	TTL time.Duration
}

// ClusterDiscovery reads the cluster's endpoint, CA, service CIDR and version from
// eks:DescribeCluster, as Karpenter does, and refreshes them when they are older than the TTL.
// A failed refresh keeps serving the last answer and is retried on the next call.
type ClusterDiscovery struct {
	api   DescribeClusterAPI // nil: overrides only
	clock clock.Clock
	opts  ClusterDiscoveryOptions

	mu      sync.Mutex
	last    ClusterInfo
	fetched time.Time
}

// NewClusterDiscovery returns a discovery over api (nil when EKS is not reachable at all: the
// overrides must then be complete).
func NewClusterDiscovery(api DescribeClusterAPI, clk clock.Clock, opts ClusterDiscoveryOptions) *ClusterDiscovery {
	if opts.TTL == 0 {
		opts.TTL = 10 * time.Minute
	}
	return &ClusterDiscovery{api: api, clock: clk, opts: opts}
}

// Get returns the cluster's coordinates: DescribeCluster's answer (refreshed past the TTL) with the
// overrides applied. It fails only when neither a past answer nor the overrides cover what a
// node needs.
func (d *ClusterDiscovery) Get(ctx context.Context) (ClusterInfo, error) {
	d.mu.Lock()
	last, fetched := d.last, d.fetched
	d.mu.Unlock()
	if !fetched.IsZero() && d.clock.Since(fetched) < d.opts.TTL {
		return last.merged(d.opts.Overrides), nil
	}
	if d.api == nil {
		return d.overridesOnly()
	}
	info, err := d.describe(ctx)
	if err != nil {
		if !fetched.IsZero() {
			return last.merged(d.opts.Overrides), nil // stale beats nothing; the next call retries
		}
		if d.opts.Overrides.complete() {
			return d.opts.Overrides, nil
		}
		return ClusterInfo{}, err
	}
	d.mu.Lock()
	d.last, d.fetched = info, d.clock.Now()
	d.mu.Unlock()
	return info.merged(d.opts.Overrides), nil
}

// KubernetesVersion is Get's version, for the EC2NodeClass controller's alias AMIs.
func (d *ClusterDiscovery) KubernetesVersion(ctx context.Context) (string, error) {
	info, err := d.Get(ctx)
	if err != nil {
		return "", err
	}
	if info.KubernetesVersion == "" {
		return "", fmt.Errorf("the Kubernetes version of cluster %s is unknown: allow eks:DescribeCluster", d.opts.Name)
	}
	return info.KubernetesVersion, nil
}

func (d *ClusterDiscovery) overridesOnly() (ClusterInfo, error) {
	if !d.opts.Overrides.complete() {
		return ClusterInfo{}, fmt.Errorf("cluster %s: no EKS client and the endpoint, CA bundle, service CIDR and version are not all set", d.opts.Name)
	}
	return d.opts.Overrides, nil
}

func (d *ClusterDiscovery) describe(ctx context.Context) (ClusterInfo, error) {
	out, err := d.api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(d.opts.Name)})
	if err != nil {
		return ClusterInfo{}, d.explain(err)
	}
	c := out.Cluster
	if c == nil {
		return ClusterInfo{}, fmt.Errorf("eks:DescribeCluster %s answered without a cluster", d.opts.Name)
	}
	info := ClusterInfo{Endpoint: aws.ToString(c.Endpoint), KubernetesVersion: aws.ToString(c.Version)}
	if c.CertificateAuthority != nil {
		info.CABundle = aws.ToString(c.CertificateAuthority.Data)
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		info.ServiceCIDR = aws.ToString(n.ServiceIpv4Cidr)
		if string(n.IpFamily) == "ipv6" || info.ServiceCIDR == "" {
			info.ServiceCIDR = firstNonEmpty(aws.ToString(n.ServiceIpv6Cidr), info.ServiceCIDR)
		}
	}
	if info.CABundle != "" {
		if _, err := base64.StdEncoding.DecodeString(info.CABundle); err != nil {
			return ClusterInfo{}, fmt.Errorf("eks:DescribeCluster %s: certificateAuthority.data is not base64: %w", d.opts.Name, err)
		}
	}
	return info, nil
}

// explain names the permission and the way around it when DescribeCluster is refused.
func (d *ClusterDiscovery) explain(err error) error {
	switch code := apiCode(err); {
	case code == "AccessDeniedException" || code == "AccessDenied" || code == "UnauthorizedOperation":
		return fmt.Errorf("eks:DescribeCluster on cluster %s was denied (%w): allow eks:DescribeCluster on arn:aws:eks:<region>:<account>:cluster/%s "+
			"in the controller's IAM policy (docs/aws.md), or set $CLUSTER_ENDPOINT, $CLUSTER_CA_BUNDLE, $CLUSTER_CIDR and $KUBERNETES_VERSION", d.opts.Name, err, d.opts.Name)
	case code == "ResourceNotFoundException":
		return fmt.Errorf("eks:DescribeCluster: no EKS cluster named %s in this region (%w): check $CLUSTER_NAME and $AWS_REGION", d.opts.Name, err)
	default:
		return fmt.Errorf("discovering cluster %s: %s", d.opts.Name, Explain("EKS DescribeCluster", err))
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// newProviderDiscovery is the provider's discovery: DescribeCluster through clients.EKS with the
// Options' cluster settings as overrides.
func newProviderDiscovery(clients *Clients, clk clock.Clock, opts Options) *ClusterDiscovery {
	var api DescribeClusterAPI
	if clients.EKS != nil {
		api = clients.EKS
	}
	return NewClusterDiscovery(api, clk, ClusterDiscoveryOptions{Name: opts.ClusterName, TTL: opts.ClusterInfoTTL, Overrides: ClusterInfo{
		Endpoint: opts.ClusterEndpoint, CABundle: opts.ClusterCABundle, ServiceCIDR: opts.ClusterCIDR, KubernetesVersion: opts.KubernetesVersion,
	}})
}

// Cluster is the provider's cluster discovery (the EC2NodeClass controller reads the Kubernetes
// version from it; the manager checks it at start-up).
func (p *CloudProvider) Cluster() *ClusterDiscovery { return p.cluster }
