package verify

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// reqMatches evaluates a NodePool/NodeClaim requirement against concrete labels.
func reqMatches(r v1.NodeSelectorRequirementWithMinValues, labels map[string]string) bool {
	val, ok := labels[r.Key]
	in := func() bool {
		for _, x := range r.Values {
			if x == val {
				return true
			}
		}
		return false
	}
	num := func() (int64, int64, bool) {
		if !ok || len(r.Values) != 1 {
			return 0, 0, false
		}
		a, err1 := strconv.ParseInt(val, 10, 64)
		b, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		return a, b, err1 == nil && err2 == nil
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && in()
	case corev1.NodeSelectorOpNotIn:
		return !ok || !in()
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt:
		a, b, good := num()
		return good && a > b
	case corev1.NodeSelectorOpLt:
		a, b, good := num()
		return good && a < b
	case v1.NodeSelectorOpGte:
		a, b, good := num()
		return good && a >= b
	case v1.NodeSelectorOpLte:
		a, b, good := num()
		return good && a <= b
	}
	return false
}

func allMatch(rs []v1.NodeSelectorRequirementWithMinValues, labels map[string]string) (bool, string) {
	for _, r := range rs {
		if !reqMatches(r, labels) {
			return false, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values)
		}
	}
	return true, ""
}

// plannedLabels is what a node launched from the plan carries: its instance type's labels, the
// pool's template labels, the offering's zone and capacity type, and, for a key no instance type of
// the input defines (the pool's own label), the single value the NodeClaim's requirements settle on.
// A key some instance type defines is never filled in from requirements: a type without the label
// launches nodes without it.
func (v *verifier) plannedLabels(pool *v1.NodePool, it *catalog.InstanceType, o catalog.Offering, reqs []v1.NodeSelectorRequirementWithMinValues, hostname string) map[string]string {
	l := map[string]string{}
	for k, x := range it.Labels {
		l[k] = x
	}
	for k, x := range pool.Spec.Template.Labels {
		l[k] = x
	}
	l[v1.LabelInstanceType] = it.Name
	l[v1.LabelTopologyZone] = o.Zone
	l[v1.CapacityTypeLabelKey] = o.CapacityType
	l[v1.NodePoolLabelKey] = pool.Name
	if hostname != "" {
		l[v1.LabelHostname] = hostname
	}
	for _, r := range reqs {
		if _, set := l[r.Key]; set || v.catalogKeys()[r.Key] {
			continue
		}
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			l[r.Key] = r.Values[0]
		}
	}
	// A pool's own key the requirements demand without naming a value (Exists, Gt, Lt, Gte, Lte) gets
	// the smallest integer at or above zero, or else below it, that satisfies all of them.
	for _, r := range reqs {
		if _, set := l[r.Key]; set || v.catalogKeys()[r.Key] || restrictedDomain(r.Key) {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
			if x, ok := integerLabel(r.Key, reqs); ok {
				l[r.Key] = x
			}
		}
	}
	return l
}

// catalogKeys are the label keys some instance type of the input carries.
func (v *verifier) catalogKeys() map[string]bool {
	if v.keys != nil {
		return v.keys
	}
	v.keys = map[string]bool{}
	for _, pi := range v.in.NodePools {
		for _, it := range pi.InstanceTypes {
			if it == nil {
				continue
			}
			for k := range it.Labels {
				v.keys[k] = true
			}
		}
	}
	return v.keys
}

func poolTaints(np *v1.NodePool) []corev1.Taint {
	return np.Spec.Template.Spec.Taints // startupTaints are not the pods' concern
}

func tolerated(p *corev1.PodSpec, taints []corev1.Taint) (corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range p.Tolerations {
			if p.Tolerations[j].ToleratesTaint(klog.Background(), t, false) {
				ok = true
				break
			}
		}
		if !ok {
			return *t, false
		}
	}
	return corev1.Taint{}, true
}

// daemonOverhead sums the requests of daemonset pods that would run on the node.
func (v *verifier) daemonOverhead(taints []corev1.Taint, node *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, ds := range v.in.DaemonSets {
		if ds == nil {
			continue
		}
		pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		if _, ok := tolerated(&pod.Spec, taints); !ok {
			continue
		}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
			continue
		}
		addTo(out, requests(pod))
	}
	return out
}

func (v *verifier) buildPlanned() {
	for i := range v.r.NewNodeClaims {
		nc := &v.r.NewNodeClaims[i]
		name := fmt.Sprintf("planned-%d", i)
		pi, ok := v.pools[nc.NodePool]
		if !ok {
			v.fail("%s: unknown NodePool %q", name, nc.NodePool)
			continue
		}
		np := pi.NodePool
		if nc.InstanceType == nil {
			v.fail("%s: no instance type", name)
			continue
		}
		poolTypes := map[string]*catalog.InstanceType{}
		for _, it := range pi.InstanceTypes {
			if it != nil {
				poolTypes[it.Name] = it
			}
		}
		inOptions := false
		for _, it := range nc.InstanceTypeOptions {
			if poolTypes[it.Name] == nil {
				v.fail("%s: option %s is not an instance type of NodePool %s", name, it.Name, np.Name)
			}
			if it.Name == nc.InstanceType.Name {
				inOptions = true
			}
		}
		if !inOptions {
			v.fail("%s: chosen type %s is not among its options", name, nc.InstanceType.Name)
		}
		offered := false
		for _, o := range nc.InstanceType.Offerings {
			if o == nc.Offering && o.Available {
				offered = true
			}
		}
		if !offered {
			v.fail("%s: offering %+v is not an available offering of %s", name, nc.Offering, nc.InstanceType.Name)
		}
		labels := v.plannedLabels(np, nc.InstanceType, nc.Offering, nc.Requirements, name)
		if ok, which := allMatch(nc.Requirements, labels); !ok {
			v.fail("%s: the chosen offering does not satisfy the plan's requirement %s", name, which)
		}
		if ok, which := allMatch(np.Spec.Template.Spec.Requirements, labels); !ok {
			v.fail("%s: node violates NodePool %s requirement %s", name, np.Name, which)
		}
		// Every option must be launchable under the requirements, none cheaper than the choice.
		values := map[string]map[string]bool{}
		for _, it := range nc.InstanceTypeOptions {
			admitted := false
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				ol := v.plannedLabels(np, it, o, nc.Requirements, "")
				if ok, _ := allMatch(nc.Requirements, ol); !ok {
					continue
				}
				if ok, _ := allMatch(np.Spec.Template.Spec.Requirements, ol); !ok {
					continue
				}
				admitted = true
				if o.Price < nc.Offering.Price-1e-9 {
					v.fail("%s: option %s offers %s/%s at %.4f, cheaper than the chosen %.4f", name, it.Name, o.Zone, o.CapacityType, o.Price, nc.Offering.Price)
				}
				for k, x := range ol {
					if values[k] == nil {
						values[k] = map[string]bool{}
					}
					values[k][x] = true
				}
			}
			if !admitted {
				v.fail("%s: option %s has no offering the requirements admit", name, it.Name)
			}
		}
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.MinValues != nil && len(values[r.Key]) < *r.MinValues {
				v.fail("%s: %d values of %s remain, NodePool %s needs minValues=%d", name, len(values[r.Key]), r.Key, np.Name, *r.MinValues)
			}
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		n := &vnode{name: name, node: node, zone: nc.Offering.Zone, hasZone: true, planned: true, pool: np.Name,
			taints: poolTaints(np), placed: nc.Pods}
		n.alloc = podsCapacity(nc.InstanceType.Capacity)
		for k, q := range nc.InstanceType.Overhead {
			cur := n.alloc[k]
			cur.Sub(q)
			n.alloc[k] = cur
		}
		n.overhead = v.daemonOverhead(n.taints, node)
		v.nodes = append(v.nodes, n)
		// Every option must hold the pods too, or a launch of it would not.
		for _, it := range nc.InstanceTypeOptions {
			if it.Name == nc.InstanceType.Name {
				continue
			}
			alloc := podsCapacity(it.Capacity)
			for k, q := range it.Overhead {
				cur := alloc[k]
				cur.Sub(q)
				alloc[k] = cur
			}
			ol := v.plannedLabels(np, it, nc.Offering, nc.Requirements, name)
			used := v.daemonOverhead(n.taints, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ol}})
			for _, p := range nc.Pods {
				addTo(used, requests(p))
			}
			if over := exceeds(used, alloc); over != "" {
				v.fail("%s: option %s cannot hold its pods: %s", name, it.Name, over)
			}
		}
	}
}

// exceeds names the first resource where used > alloc, or "".
func exceeds(used, alloc corev1.ResourceList) string {
	for k, q := range used {
		if q.IsZero() {
			continue
		}
		a := alloc[k]
		if q.Cmp(a) > 0 {
			return fmt.Sprintf("%s %s > %s", k, q.String(), a.String())
		}
	}
	return ""
}

func (v *verifier) checkNode(n *vnode) {
	if len(n.placed) == 0 {
		return
	}
	used := corev1.ResourceList{}
	addTo(used, n.overhead)
	for _, p := range n.bound {
		addTo(used, requests(p))
	}
	newlyRequested := map[corev1.ResourceName]bool{}
	for _, p := range n.placed {
		rl := requests(p)
		for k := range rl {
			newlyRequested[k] = true
		}
		addTo(used, rl)
		if t, ok := tolerated(&p.Spec, n.taints); !ok {
			v.fail("pod %s on %s does not tolerate taint %s", podKey(p), n.name, t.ToString())
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.node); !ok || err != nil {
			v.fail("pod %s on %s: node selector/affinity does not match the node's labels", podKey(p), n.name)
		}
		for _, vol := range p.Spec.Volumes {
			var claim string
			switch {
			case vol.PersistentVolumeClaim != nil:
				claim = vol.PersistentVolumeClaim.ClaimName
			case vol.Ephemeral != nil:
				claim = p.Name + "-" + vol.Name
			default:
				continue
			}
			zones, ok := v.in.VolumeZones[p.Namespace+"/"+claim]
			if !ok || len(zones) == 0 {
				continue
			}
			found := false
			for _, z := range zones {
				found = found || (n.hasZone && z == n.zone)
			}
			if !found {
				v.fail("pod %s on %s (zone %q): volume %s lives in %v", podKey(p), n.name, n.zone, claim, zones)
			}
		}
	}
	for k, q := range used {
		if !newlyRequested[k] || q.IsZero() {
			continue
		}
		a := n.alloc[k]
		if q.Cmp(a) > 0 {
			v.fail("node %s is over-committed: %s requested %s > allocatable %s", n.name, k, q.String(), a.String())
		}
	}
	v.checkPorts(n)
	v.checkVolumeLimits(n)
}

type port struct {
	proto, ip string
	port      int32
}

func hostPorts(p *corev1.Pod) []port {
	var out []port
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				proto := string(cp.Protocol)
				if proto == "" {
					proto = "TCP"
				}
				ip := cp.HostIP
				if ip == "0.0.0.0" {
					ip = ""
				}
				out = append(out, port{proto, ip, cp.HostPort})
			}
		}
	}
	return out
}

func (v *verifier) checkPorts(n *vnode) {
	type owner struct {
		p      port
		pod    string
		placed bool
	}
	var seen []owner
	add := func(p *corev1.Pod, placed bool) {
		for _, hp := range hostPorts(p) {
			for _, o := range seen {
				if o.pod != podKey(p) && (placed || o.placed) && o.p.port == hp.port && o.p.proto == hp.proto && (o.p.ip == hp.ip || o.p.ip == "" || hp.ip == "") {
					v.fail("host port %s/%d conflict on %s between %s and %s", hp.proto, hp.port, n.name, o.pod, podKey(p))
				}
			}
			seen = append(seen, owner{hp, podKey(p), placed})
		}
	}
	for _, p := range n.bound {
		add(p, false)
	}
	for _, p := range n.placed {
		add(p, true)
	}
}

func (v *verifier) checkLimits() {
	used := map[string]corev1.ResourceList{}
	for _, nc := range v.r.NewNodeClaims {
		if nc.InstanceType == nil {
			continue
		}
		if used[nc.NodePool] == nil {
			used[nc.NodePool] = corev1.ResourceList{}
		}
		addTo(used[nc.NodePool], podsCapacity(nc.InstanceType.Capacity))
	}
	for name, pi := range v.pools {
		if pi.Remaining == nil {
			continue
		}
		for k, rem := range pi.Remaining {
			u := used[name][k]
			if u.Cmp(rem) > 0 {
				v.fail("NodePool %s: new nodes add %s %s, more than the %s remaining under its limits", name, u.String(), k, rem.String())
			}
		}
	}
}

func (v *verifier) checkCost() {
	sum := 0.0
	for _, nc := range v.r.NewNodeClaims {
		sum += nc.Offering.Price
	}
	if math.Abs(sum-v.r.CostPerHour) > 1e-6*math.Max(1, sum) {
		v.fail("CostPerHour %.6f is not the sum of the offerings %.6f", v.r.CostPerHour, sum)
	}
	if v.r.LowerBoundPerHour > v.r.CostPerHour*(1+1e-6)+1e-9 {
		v.fail("LowerBoundPerHour %.6f exceeds CostPerHour %.6f", v.r.LowerBoundPerHour, v.r.CostPerHour)
	}
	if v.r.LowerBoundPerHour < 0 {
		v.fail("negative LowerBoundPerHour")
	}
}

var _ = resource.MustParse
