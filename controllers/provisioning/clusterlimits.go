package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// ClusterLimitsFunc returns the ceiling on all Joist nodes together (resources and node count) and
// the policy that set it; nil limits and maxNodes mean no ceiling.
type ClusterLimitsFunc func(ctx context.Context) (limits corev1.ResourceList, maxNodes *int64, source string, err error)

// clusterHeadroom is what the cluster-wide limits leave for new nodes.
type clusterHeadroom struct {
	resources corev1.ResourceList // nil: unlimited
	nodes     *int64              // nil: unlimited
	source    string
	limits    corev1.ResourceList
	maxNodes  *int64
}

func (p *Provisioner) clusterHeadroom(ctx context.Context, claims []v1.NodeClaim) (clusterHeadroom, error) {
	if p.opts.ClusterLimits == nil {
		return clusterHeadroom{}, nil
	}
	limits, maxNodes, source, err := p.opts.ClusterLimits(ctx)
	if err != nil {
		return clusterHeadroom{}, fmt.Errorf("reading cluster limits: %w", err)
	}
	h := clusterHeadroom{source: source, limits: limits, maxNodes: maxNodes}
	if len(limits) > 0 {
		h.resources = corev1.ResourceList{}
		for name, limit := range limits {
			left := limit.DeepCopy()
			for i := range claims {
				used, ok := claims[i].Status.Capacity[name]
				if !ok {
					used = claims[i].Spec.Resources.Requests[name]
				}
				left.Sub(used)
			}
			h.resources[name] = left
		}
	}
	if maxNodes != nil {
		left := *maxNodes - int64(len(claims))
		h.nodes = &left
	}
	return h, nil
}
