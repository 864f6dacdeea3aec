package simulate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
)

// buildInput checks the loaded objects, expands the workloads into pods and builds the snapshot the
// provisioner would: pods bound by spec.nodeName attached to their Node, every NodePool given the
// whole catalog (the solver applies the pool's requirements), its limits less the capacity of its
// NodeClaims and nodes, capped by the Guardrails' cluster limits, and the volume zones.
func buildInput(objs objects, instanceTypes []*catalog.InstanceType) (*snapshot.Snapshot, error) {
	var c snapshot.Cluster
	seen := map[string]source{}
	addPod := func(src source, pod *corev1.Pod) error {
		pod.Namespace = namespaceOr(pod.Namespace)
		key := pod.Namespace + "/" + pod.Name
		if first, dup := seen[key]; dup {
			return src.errorf("pod %s is defined twice (first at %s); pod names must be unique per namespace", key, first)
		}
		seen[key] = src
		if pod.UID == "" {
			pod.UID = snapshot.StableUID("pod", pod.Namespace, pod.Name)
		}
		c.Pods = append(c.Pods, pod)
		return nil
	}

	nodes := map[string]bool{}
	for _, n := range objs.nodes {
		if nodes[n.obj.Name] {
			return nil, n.src.errorf("node %s is defined twice", n.obj.Name)
		}
		nodes[n.obj.Name] = true
		if !n.obj.Spec.Unschedulable && len(n.obj.Status.Allocatable) == 0 && len(n.obj.Status.Capacity) == 0 {
			return nil, n.src.errorf("status.allocatable is required (or status.capacity); the simulation needs to know what fits on the node")
		}
		c.Nodes = append(c.Nodes, n.obj)
	}
	for _, p := range objs.pods {
		if name := p.obj.Spec.NodeName; name != "" && !nodes[name] {
			return nil, p.src.errorf("spec.nodeName %q names no Node in the input; add the Node or remove spec.nodeName to make the pod pending", name)
		}
		if err := addPod(p.src, p.obj); err != nil {
			return nil, err
		}
	}
	for _, w := range objs.workloads {
		pods, err := snapshot.Expand(w.obj)
		if err != nil {
			return nil, w.src.errorf("%v", err)
		}
		for _, pod := range pods {
			if err := addPod(w.src, pod); err != nil {
				return nil, err
			}
		}
	}
	pools := map[string]source{}
	for _, np := range objs.nodePools {
		if first, dup := pools[np.obj.Name]; dup {
			return nil, np.src.errorf("NodePool %s is defined twice (first at %s)", np.obj.Name, first)
		}
		pools[np.obj.Name] = np.src
		c.NodePools = append(c.NodePools, np.obj)
	}
	for _, ds := range objs.daemonSets {
		ds.obj.Namespace = namespaceOr(ds.obj.Namespace)
		c.DaemonSets = append(c.DaemonSets, ds.obj)
	}
	for _, nc := range objs.nodeClaims {
		c.NodeClaims = append(c.NodeClaims, nc.obj)
	}
	for _, g := range objs.guardrails {
		c.Guardrails = append(c.Guardrails, *g.obj)
	}
	for _, pv := range objs.volumes {
		c.PersistentVolumes = append(c.PersistentVolumes, pv.obj)
	}
	for _, pvc := range objs.claims {
		pvc.obj.Namespace = namespaceOr(pvc.obj.Namespace)
		c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, pvc.obj)
	}
	for _, sc := range objs.storageClasses {
		c.StorageClasses = append(c.StorageClasses, sc.obj)
	}
	for _, cn := range objs.csiNodes {
		c.CSINodes = append(c.CSINodes, cn.obj)
	}
	for _, ns := range objs.namespaces {
		c.Namespaces = append(c.Namespaces, ns.obj)
	}
	return snapshot.Build(c, snapshot.Options{
		InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return instanceTypes, nil },
	})
}

// admit applies the Guardrails' cluster-wide limits to the plan as the provisioner does: planned
// nodes beyond them are dropped and their pods reported unschedulable.
func admit(s *snapshot.Snapshot, res solver.Result) solver.Result {
	admitted, blocked := s.Admit(res.NewNodeClaims)
	if len(blocked) == 0 {
		return res
	}
	res.NewNodeClaims, res.CostPerHour = admitted, 0
	for _, nc := range admitted {
		res.CostPerHour += nc.Offering.Price
	}
	for _, b := range blocked {
		for _, pod := range b.Plan.Pods {
			res.Unschedulable = append(res.Unschedulable, solver.Unschedulable{Pod: pod, Reason: b.Reason, Cause: solver.CauseLimits})
		}
	}
	return res
}

func namespaceOr(ns string) string {
	if ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

func podKey(p *corev1.Pod) string { return fmt.Sprintf("%s/%s", p.Namespace, p.Name) }
