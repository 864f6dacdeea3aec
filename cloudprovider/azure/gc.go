package azure

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// CollectNICs deletes this cluster's NICs that are attached to no VM and belong to no NodeClaim
// (left by a launch that failed after the NIC was created, or a VM deleted out of band). VMs
// without claims are collected by the core garbage collection through List.
func (p *CloudProvider) CollectNICs(ctx context.Context) (int, error) {
	claims := &v1.NodeClaimList{}
	if err := p.kube.List(ctx, claims); err != nil {
		return 0, fmt.Errorf("listing nodeclaims: %w", err)
	}
	keep := map[string]bool{}
	for _, c := range claims.Items {
		keep[ResourceName(c.Name)] = true
	}
	deleted := 0
	pager := p.clients.NICs.NewListPager(p.opts.ResourceGroup, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("listing NICs in %s: %w", p.opts.ResourceGroup, err)
		}
		for _, nic := range page.Value {
			name := str(nic.Name)
			if str(nic.Tags[azv1beta1.TagKeyCluster]) != p.opts.ClusterName || keep[name] ||
				(nic.Properties != nil && nic.Properties.VirtualMachine != nil) {
				continue
			}
			if err := p.deleteNIC(ctx, name); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}

// NICCollector runs CollectNICs every interval until ctx ends.
func (p *CloudProvider) NICCollector(interval time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			if n, err := p.CollectNICs(ctx); err != nil {
				log.FromContext(ctx).Error(err, "collecting orphaned NICs")
			} else if n > 0 {
				log.FromContext(ctx).Info("deleted orphaned NICs", "count", n)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-p.clock.After(interval):
			}
		}
	}
}
