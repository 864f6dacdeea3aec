package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/disruptionpolicy"
)

// podsOn lists the pods bound to the node.
func (c *Controller) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.kube.List(ctx, list, client.MatchingFields{indexes.PodNodeName: node}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// largestFirst keeps, of candidates (movable pods of wave w on the node, evictable now), those the
// drain evicts now: a disruption command's pods go largest first across all its nodes
// (disruptionpolicy.EvictNow), a size only once the re-creations of the larger ones have landed.
// onNode are all the node's pods. A node no command took (expiry, a deleted NodeClaim) orders its
// own pods alike.
func (c *Controller) largestFirst(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim, onNode, candidates []*corev1.Pod, w int, now time.Time) ([]*corev1.Pod, error) {
	var waiting, evicted []*corev1.Pod
	collect := func(pods []*corev1.Pod, peer bool) {
		for _, p := range pods {
			if !disruptionpolicy.Movable(p) || wave(p) != w {
				continue
			}
			switch {
			case !p.DeletionTimestamp.IsZero():
				evicted = append(evicted, p)
			case !peer:
			case disruptionpolicy.Evicted(p):
				if on, _ := disruptionpolicy.DoNotDisrupt(p, now); !on {
					waiting = append(waiting, p)
				}
			}
		}
	}
	collect(onNode, false)
	if nc != nil {
		for _, name := range disruptionpolicy.CommandTargets(nc) {
			if name == nc.Name {
				continue
			}
			peer := &v1.NodeClaim{}
			if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, peer); err != nil {
				if client.IgnoreNotFound(err) != nil {
					return nil, fmt.Errorf("reading nodeclaim %s of the same disruption command: %w", name, err)
				}
				continue
			}
			if peer.DeletionTimestamp.IsZero() || peer.Status.NodeName == "" || peer.Status.NodeName == node.Name {
				continue // not being taken away (a record left over): its pods do not move now
			}
			pods, err := c.podsOn(ctx, peer.Status.NodeName)
			if err != nil {
				return nil, err
			}
			collect(pods, true)
		}
	}
	var pending []*corev1.Pod
	if len(evicted) > 0 {
		var err error
		if pending, err = c.podsOn(ctx, ""); err != nil {
			return nil, err
		}
	}
	return disruptionpolicy.EvictNow(candidates, waiting, disruptionpolicy.Landing(evicted, pending)), nil
}
