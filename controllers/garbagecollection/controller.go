// Package garbagecollection terminates provider instances that no NodeClaim owns (leaked by a crash
// between launch and status write, or by a claim deleted out of band), deletes launched NodeClaims
// whose instance disappeared (terminated outside Joist: their finalizer then removes the Node), and
// deletes Joist's Nodes that no claim owns and whose instance is gone. Each waits out a grace
// period (MinAge) and is logged with the instance's provider ID.
package garbagecollection

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/cachedobjects"
)

// Options tune collection.
type Options struct {
	// Period between sweeps.
	Period time.Duration
	// MinAge protects instances, claims and nodes younger than this (a claim's status may not be
	// written yet, a node may register before its claim records the instance).
	MinAge time.Duration
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options { return Options{Period: 30 * time.Second, MinAge: 30 * time.Second} }

// Collector is a leader-elected runnable sweeping periodically.
type Collector struct {
	kube client.Client
	// informers, when set, are the cache's: claims and nodes are read from their stores (nil: from
	// kube, listed into typed lists).
	informers ctrlcache.Informers
	cloud     cloudprovider.CloudProvider
	clock     clock.WithTicker
	opts      Options
}

var _ manager.LeaderElectionRunnable = (*Collector)(nil)

// New returns a collector; register it with mgr.Add. informers (may be nil) are the manager's cache,
// whose stores the sweep reads claims and nodes from.
func New(kube client.Client, informers ctrlcache.Informers, cloud cloudprovider.CloudProvider, clk clock.WithTicker, opts Options) *Collector {
	return &Collector{kube: kube, informers: informers, cloud: cloud, clock: clk, opts: opts}
}

// NeedLeaderElection is true.
func (c *Collector) NeedLeaderElection() bool { return true }

// Start sweeps every period until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	ticker := c.clock.NewTicker(c.opts.Period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := c.Sweep(ctx); err != nil {
				log.FromContext(ctx).Error(err, "garbage collecting instances")
			}
		}
	}
}

// Sweep runs one collection.
func (c *Collector) Sweep(ctx context.Context) error {
	// Read only (deletes name the object, nothing is modified), from the informers' stores: a deep
	// copy of every claim and node each sweep was 15 MB of the heap at 5,000 nodes, and a typed
	// list even without copies one struct per object (~1.6 KB a claim and node a sweep).
	claims, err := cachedobjects.Objects[v1.NodeClaim](ctx, c.informers, c.kube, &v1.NodeClaimList{}, nil)
	if err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	// An instance is a claim's only if the claim's providerID names it, or if the claim it is
	// tagged for has recorded no instance yet: a second instance tagged for a launched claim (a
	// relaunch that did not see the first) is a duplicate and is collected like a leak.
	owned := map[string]bool{}      // provider IDs claims name
	unlaunched := map[string]bool{} // names of claims without a provider ID
	launchedAs := map[string]string{}
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			owned[nc.Status.ProviderID] = true
			launchedAs[nc.Name] = nc.Status.ProviderID
		} else {
			unlaunched[nc.Name] = true
		}
	}
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	live := map[string]bool{}
	for _, inst := range instances {
		live[inst.Status.ProviderID] = true
		if owned[inst.Status.ProviderID] || unlaunched[inst.Name] || c.clock.Since(inst.CreationTimestamp.Time) < c.opts.MinAge {
			continue
		}
		what := "terminating instance with no nodeclaim"
		if launchedAs[inst.Name] != "" {
			what = "terminating duplicate instance: its nodeclaim runs on " + launchedAs[inst.Name]
		}
		log.FromContext(ctx).Info(what, "providerID", inst.Status.ProviderID,
			"instance", instanceOf(inst.Status.ProviderID), "taggedFor", inst.Name, "age", c.clock.Since(inst.CreationTimestamp.Time).Round(time.Second).String())
		if err := c.cloud.Delete(ctx, inst); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			return fmt.Errorf("terminating leaked instance %s: %w", inst.Status.ProviderID, err)
		}
	}
	for _, nc := range claims {
		if nc.Status.ProviderID == "" || live[nc.Status.ProviderID] || !nc.DeletionTimestamp.IsZero() ||
			!nc.IsTrue(v1.ConditionTypeLaunched) || c.clock.Since(nc.CreationTimestamp.Time) < c.opts.MinAge {
			continue
		}
		if _, err := c.cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
			continue
		}
		log.FromContext(ctx).Info("deleting nodeclaim whose instance is gone", "nodeclaim", nc.Name,
			"providerID", nc.Status.ProviderID, "instance", instanceOf(nc.Status.ProviderID))
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
		}
	}
	return c.sweepNodes(ctx, owned, live)
}

// sweepNodes deletes Nodes launched through a NodePool that no claim owns and whose instance the
// provider no longer has. Nodes Joist did not launch (no karpenter.sh/nodepool label) are left alone.
func (c *Collector) sweepNodes(ctx context.Context, owned, live map[string]bool) error {
	nodes, err := cachedobjects.Objects[corev1.Node](ctx, c.informers, c.kube, &corev1.NodeList{}, func(n *corev1.Node) bool {
		_, ok := n.Labels[v1.NodePoolLabelKey]
		return ok
	})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, node := range nodes {
		pid := node.Spec.ProviderID
		if pid == "" || owned[pid] || live[pid] || !node.DeletionTimestamp.IsZero() || c.clock.Since(node.CreationTimestamp.Time) < c.opts.MinAge {
			continue
		}
		if _, err := c.cloud.Get(ctx, pid); !cloudprovider.IsNodeClaimNotFoundError(err) {
			continue
		}
		log.FromContext(ctx).Info("deleting node whose instance is gone", "node", node.Name, "providerID", pid, "instance", instanceOf(pid))
		if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
	}
	return nil
}

// instanceOf is the last segment of a provider ID: the instance id on EC2 (aws:///zone/i-…).
func instanceOf(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}
