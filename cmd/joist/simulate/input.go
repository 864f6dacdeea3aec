package simulate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// zoneLabels are the node-affinity keys that pin a PersistentVolume to zones.
var zoneLabels = map[string]bool{v1.LabelTopologyZone: true, "failure-domain.beta.kubernetes.io/zone": true}

// buildInput turns the loaded objects into the solver's input: workloads expanded into pods, pods
// bound by spec.nodeName attached to their Node, every NodePool given the whole catalog (the solver
// applies the pool's requirements) and its limits less the capacity of its existing nodes.
func buildInput(objs objects, instanceTypes []*catalog.InstanceType) (solver.Input, error) {
	var in solver.Input
	seen := map[string]source{}
	addPod := func(src source, pod *corev1.Pod) error {
		pod.Namespace = namespaceOr(pod.Namespace)
		key := pod.Namespace + "/" + pod.Name
		if first, dup := seen[key]; dup {
			return src.errorf("pod %s is defined twice (first at %s); pod names must be unique per namespace", key, first)
		}
		seen[key] = src
		if pod.UID == "" {
			pod.UID = uid("pod", pod.Namespace, pod.Name)
		}
		return nil
	}

	nodeIndex := map[string]int{}
	cordoned := map[string]bool{}
	for _, n := range objs.nodes {
		if _, dup := nodeIndex[n.obj.Name]; dup || cordoned[n.obj.Name] {
			return in, n.src.errorf("node %s is defined twice", n.obj.Name)
		}
		if n.obj.Spec.Unschedulable {
			cordoned[n.obj.Name] = true // takes no new pods; its pods are not pending
			continue
		}
		alloc := n.obj.Status.Allocatable
		if len(alloc) == 0 {
			alloc = n.obj.Status.Capacity
		}
		if len(alloc) == 0 {
			return in, n.src.errorf("status.allocatable is required (or status.capacity); the simulation needs to know what fits on the node")
		}
		labels := map[string]string{v1.LabelHostname: n.obj.Name} // as the kubelet sets it
		for k, v := range n.obj.Labels {
			labels[k] = v
		}
		nodeIndex[n.obj.Name] = len(in.Nodes)
		in.Nodes = append(in.Nodes, solver.ExistingNode{
			Name:        n.obj.Name,
			NodePool:    n.obj.Labels[v1.NodePoolLabelKey],
			Labels:      labels,
			Taints:      n.obj.Spec.Taints,
			Allocatable: alloc,
		})
	}

	for _, p := range objs.pods {
		pod := p.obj
		if err := addPod(p.src, pod); err != nil {
			return in, err
		}
		if pod.Spec.NodeName == "" {
			in.Pods = append(in.Pods, pod)
			continue
		}
		if cordoned[pod.Spec.NodeName] || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		i, ok := nodeIndex[pod.Spec.NodeName]
		if !ok {
			return in, p.src.errorf("spec.nodeName %q names no Node in the input; add the Node or remove spec.nodeName to make the pod pending", pod.Spec.NodeName)
		}
		in.Nodes[i].Pods = append(in.Nodes[i].Pods, pod)
	}
	for _, w := range objs.workloads {
		pods, err := expand(w.src, w.obj)
		if err != nil {
			return in, err
		}
		for _, pod := range pods {
			if err := addPod(w.src, pod); err != nil {
				return in, err
			}
		}
		in.Pods = append(in.Pods, pods...)
	}

	pools := map[string]source{}
	for _, np := range objs.nodePools {
		if first, dup := pools[np.obj.Name]; dup {
			return in, np.src.errorf("NodePool %s is defined twice (first at %s)", np.obj.Name, first)
		}
		pools[np.obj.Name] = np.src
		in.NodePools = append(in.NodePools, solver.NodePoolInput{
			NodePool:      np.obj,
			InstanceTypes: instanceTypes,
			Remaining:     remaining(np.obj, objs.nodes),
		})
	}
	for _, ds := range objs.daemonSets {
		ds.obj.Namespace = namespaceOr(ds.obj.Namespace)
		in.DaemonSets = append(in.DaemonSets, ds.obj)
	}
	for _, pv := range objs.volumes {
		ref := pv.obj.Spec.ClaimRef
		if ref == nil || pv.obj.Spec.NodeAffinity == nil || pv.obj.Spec.NodeAffinity.Required == nil {
			continue
		}
		var zones []string
		for _, term := range pv.obj.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, req := range term.MatchExpressions {
				if zoneLabels[req.Key] && req.Operator == corev1.NodeSelectorOpIn {
					zones = append(zones, req.Values...)
				}
			}
		}
		if len(zones) == 0 {
			continue
		}
		if in.VolumeZones == nil {
			in.VolumeZones = map[string][]string{}
		}
		key := namespaceOr(ref.Namespace) + "/" + ref.Name
		in.VolumeZones[key] = append(in.VolumeZones[key], zones...)
	}
	return in, nil
}

// remaining is the pool's limits less the capacity of its existing nodes; nil when unlimited.
func remaining(np *v1.NodePool, nodes []sourced[*corev1.Node]) corev1.ResourceList {
	if len(np.Spec.Limits) == 0 {
		return nil
	}
	out := corev1.ResourceList(np.Spec.Limits).DeepCopy()
	for _, n := range nodes {
		if n.obj.Labels[v1.NodePoolLabelKey] != np.Name {
			continue
		}
		capacity := n.obj.Status.Capacity
		if len(capacity) == 0 {
			capacity = n.obj.Status.Allocatable
		}
		for name, q := range out {
			if used, ok := capacity[name]; ok {
				q.Sub(used)
				out[name] = q
			}
		}
	}
	return out
}

func podKey(p *corev1.Pod) string { return fmt.Sprintf("%s/%s", p.Namespace, p.Name) }
