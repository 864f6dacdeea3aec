package provisioning

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/solver"
)

// snapshot is one solver input plus what the provisioner needs to act on the result.
type snapshot struct {
	input     solver.Input
	nodePools map[string]*v1.NodePool
	// pending are the pods handed to the solver (provisionable and not nominated to live capacity).
	pending []*corev1.Pod
	cluster policy.Headroom
}

// snapshot reads the cluster from the informer cache and builds the solver's input.
func (p *Provisioner) snapshot(ctx context.Context) (*snapshot, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
		dss    appsv1.DaemonSetList
	)
	for _, l := range []client.ObjectList{&pools, &claims, &nodes, &pods, &dss} {
		if err := p.kube.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	s := &snapshot{nodePools: map[string]*v1.NodePool{}}
	for i := range dss.Items {
		s.input.DaemonSets = append(s.input.DaemonSets, &dss.Items[i])
	}

	claimsByProviderID := map[string]*v1.NodeClaim{}
	claimsByPool := map[string][]*v1.NodeClaim{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Status.ProviderID != "" {
			claimsByProviderID[nc.Status.ProviderID] = nc
		}
		claimsByPool[nc.Labels[v1.NodePoolLabelKey]] = append(claimsByPool[nc.Labels[v1.NodePoolLabelKey]], nc)
	}

	instanceTypes := map[string][]*catalog.InstanceType{}
	var err error
	if s.cluster, err = p.clusterHeadroom(ctx, claims.Items); err != nil {
		return nil, err
	}
	headroom := s.cluster.Remaining
	for i := range pools.Items {
		np := &pools.Items[i]
		if !np.DeletionTimestamp.IsZero() || !np.IsTrue(v1.ConditionTypeReady) {
			continue
		}
		its, err := p.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			return nil, fmt.Errorf("getting instance types for nodepool %s: %w", np.Name, err)
		}
		instanceTypes[np.Name] = its
		s.nodePools[np.Name] = np
		s.input.NodePools = append(s.input.NodePools, solver.NodePoolInput{
			NodePool: np, InstanceTypes: its, Remaining: remaining(np, claimsByPool[np.Name], headroom),
		})
	}

	podsByNode := map[string][]*corev1.Pod{}
	nominated := map[string][]*corev1.Pod{} // claim name → pending pods nominated to it
	live := p.liveClaims(claims.Items)
	claimOfNode := state.ClaimsByNodeName(claims.Items) // nominatedNodeName holds node names, not claim names
	for i := range pods.Items {
		pod := &pods.Items[i]
		switch {
		case pod.Spec.NodeName != "":
			if !isTerminal(pod) {
				podsByNode[pod.Spec.NodeName] = append(podsByNode[pod.Spec.NodeName], pod)
			}
		case provisionable(pod):
			p.nominations.Expired(pod.UID, p.clock.Now(), p.opts.RejectionGrace)
			claim, ok := p.nominations.ClaimOf(pod.UID)
			if c := claimOfNode[pod.Status.NominatedNodeName]; !ok && live[c] && !p.nominations.Turned(pod.UID) {
				// Nominated before a restart: the pod remembers. (Not a pod whose nomination
				// expired after the scheduler turned it away: the field is just stale.)
				claim, ok = c, true
				p.nominations.Nominate(claim, pod.UID)
			}
			if ok && live[claim] {
				nominated[claim] = append(nominated[claim], pod)
				continue
			}
			s.pending = append(s.pending, pod)
		}
	}
	s.input.Pods = s.pending

	registered := map[string]bool{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !node.DeletionTimestamp.IsZero() || node.Spec.Unschedulable {
			continue
		}
		nc := claimsByProviderID[node.Spec.ProviderID]
		en := solver.ExistingNode{
			Name: node.Name, Labels: node.Labels, Taints: node.Spec.Taints,
			Allocatable: node.Status.Allocatable, Pods: podsByNode[node.Name],
		}
		if nc != nil {
			registered[nc.Name] = true
			if !nc.DeletionTimestamp.IsZero() {
				continue
			}
			en.NodeClaim, en.NodePool = nc.Name, nc.Labels[v1.NodePoolLabelKey]
			en.Pods = append(en.Pods, nominated[nc.Name]...)
			if !nc.IsTrue(v1.ConditionTypeInitialized) {
				// Startup, unregistered and not-ready taints are about to go: plan with the claim's own.
				en.Taints = nc.Spec.Taints
			}
		}
		s.input.Nodes = append(s.input.Nodes, en)
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if registered[nc.Name] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		s.input.Nodes = append(s.input.Nodes, inFlightNode(nc, instanceTypes[nc.Labels[v1.NodePoolLabelKey]], nominated[nc.Name]))
	}
	s.input.VolumeZones, err = p.volumeZones(ctx, s.pending)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// liveClaims are the claims whose nominations still count: not deleted, and not initialized for
// longer than the nomination TTL (a pod still pending by then is re-planned).
func (p *Provisioner) liveClaims(claims []v1.NodeClaim) map[string]bool {
	live := map[string]bool{}
	now := p.clock.Now()
	for i := range claims {
		nc := &claims[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if c := nc.GetCondition(v1.ConditionTypeInitialized); c != nil && c.Status == "True" &&
			now.Sub(c.LastTransitionTime.Time) > p.opts.NominationTTL {
			p.nominations.ForgetClaim(nc.Name)
			continue
		}
		live[nc.Name] = true
	}
	return live
}

// inFlightNode describes a claim with no Node yet as capacity: its labels are its single-valued
// requirements; its allocatable the launched type's, or before launch the smallest type it admits.
func inFlightNode(nc *v1.NodeClaim, its []*catalog.InstanceType, nominated []*corev1.Pod) solver.ExistingNode {
	labels := map[string]string{}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	allocatable := nc.Status.Allocatable
	if len(allocatable) == 0 {
		allocatable = smallestAllocatable(nc, its)
	}
	return solver.ExistingNode{
		Name: nc.Name, NodeClaim: nc.Name, InFlight: true, NodePool: nc.Labels[v1.NodePoolLabelKey],
		Labels: labels, Taints: nc.Spec.Taints, Allocatable: allocatable, Pods: nominated,
	}
}

// smallestAllocatable is the per-resource minimum allocatable over the instance types the claim admits.
func smallestAllocatable(nc *v1.NodeClaim, its []*catalog.InstanceType) corev1.ResourceList {
	var out corev1.ResourceList
	for _, l := range cloudprovider.LaunchOptions(nc.Spec.Requirements, its, nil) {
		a := l.InstanceType.Allocatable()
		if out == nil {
			out = a
			continue
		}
		for name, q := range out {
			if aq, ok := a[name]; !ok || aq.Cmp(q) < 0 {
				out[name] = aq
			}
		}
	}
	if out == nil {
		return nc.Spec.Resources.Requests.DeepCopy()
	}
	return out
}

// remaining is the pool's limits less the capacity of its claims (launched capacity, or the requests
// of claims not launched yet), further capped by the cluster-wide headroom. nil means unlimited.
func remaining(np *v1.NodePool, claims []*v1.NodeClaim, cluster corev1.ResourceList) corev1.ResourceList {
	if len(np.Spec.Limits) == 0 && len(cluster) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for name, limit := range np.Spec.Limits {
		left := limit.DeepCopy()
		for _, nc := range claims {
			left.Sub(claimCapacity(nc)[name])
		}
		out[name] = left
	}
	for name, q := range cluster {
		if cur, ok := out[name]; !ok || q.Cmp(cur) < 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// volumeZones maps "namespace/claim" of the pending pods' bound PVCs to the zones their volumes live in.
func (p *Provisioner) volumeZones(ctx context.Context, pending []*corev1.Pod) (map[string][]string, error) {
	out := map[string][]string{}
	for _, pod := range pending {
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil {
				continue
			}
			key := pod.Namespace + "/" + vol.PersistentVolumeClaim.ClaimName
			if _, done := out[key]; done {
				continue
			}
			zones, err := p.pvcZones(ctx, pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return nil, err
			}
			if len(zones) > 0 {
				out[key] = zones
			}
		}
	}
	return out, nil
}

func (p *Provisioner) pvcZones(ctx context.Context, namespace, name string) ([]string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := p.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil, nil
	}
	var zones []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == v1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
				zones = append(zones, r.Values...)
			}
		}
	}
	sort.Strings(zones)
	return zones, nil
}
