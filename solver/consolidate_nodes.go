package solver

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/podkind"
)

// planner holds the consolidation search state: the candidates in rank order and the budgets left.
type planner struct {
	in      ConsolidationInput
	nodes   map[string]*ExistingNode
	price   map[string]float64 // known prices of existing nodes
	budgets map[string]DisruptionBudget
	// gone are nodes an earlier command of this plan already removes.
	gone map[string]bool
	// cands are the priced, placeable candidates, ranked most worth disrupting first.
	cands []*cand
	kept  map[string]string
	bound *bound
}

type cand struct {
	Candidate
	node    *ExistingNode
	pool    string
	price   float64
	priced  bool
	movable []*corev1.Pod
	// util is the share of the node's allocatable its movable pods use (the larger of cpu and memory).
	util float64
}

func newPlanner(in ConsolidationInput) *planner {
	p := &planner{in: in, nodes: map[string]*ExistingNode{}, price: map[string]float64{}, budgets: map[string]DisruptionBudget{},
		gone: map[string]bool{}, kept: map[string]string{}}
	for pool, b := range in.Budgets {
		cp := DisruptionBudget{}
		for r, n := range b {
			cp[r] = n
		}
		p.budgets[pool] = cp
	}
	pools := map[string]*NodePoolInput{}
	for i := range in.NodePools {
		pools[in.NodePools[i].NodePool.Name] = &in.NodePools[i]
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		p.nodes[n.Name] = n
		if pr, ok := nodePrice(n, pools[n.NodePool]); ok {
			p.price[n.Name] = pr
		}
	}
	seen := map[string]bool{}
	for _, c := range in.Candidates {
		if seen[c.Node] {
			continue
		}
		seen[c.Node] = true
		n, ok := p.nodes[c.Node]
		switch {
		case !ok:
			p.kept[c.Node] = KeptNotFound
			continue
		case n.InFlight:
			p.kept[c.Node] = KeptInFlight
			continue
		}
		pr, priced := p.price[c.Node]
		cd := &cand{Candidate: c, node: n, pool: n.NodePool, price: pr, priced: priced, movable: movablePods(n.Pods)}
		cd.util = utilization(cd.movable, n.Allocatable)
		p.cands = append(p.cands, cd)
	}
	// Most worth disrupting first: the largest expected saving (price × unused share) per unit of
	// disruption cost; then by name so the order is total.
	sort.SliceStable(p.cands, func(i, j int) bool {
		a, b := p.cands[i], p.cands[j]
		va, vb := a.value(), b.value()
		if va != vb {
			return va > vb
		}
		return a.Node < b.Node
	})
	return p
}

func (c *cand) value() float64 {
	return c.price * (1 - math.Min(c.util, 1)) / (1 + math.Max(c.DisruptionCost, 0))
}

// take uses one unit of pool's budget for reason; with no budget left it reports false. A budget
// spent on one reason is spent for the others too: a budget without reasons counts every disruption.
func (p *planner) take(pool string, reason v1.DisruptionReason) bool {
	b := p.budgets[pool]
	if b[reason] <= 0 {
		return false
	}
	for r := range b {
		b[r]--
	}
	return true
}

func (p *planner) totalPrice() float64 {
	sum := 0.0
	for _, n := range p.in.Nodes {
		sum += p.price[n.Name]
	}
	return sum
}

// nodePrice is the price of the offering an existing node runs on: its pool's instance type named
// by its instance-type label, in its zone and capacity type (availability does not matter: it runs).
func nodePrice(n *ExistingNode, pool *NodePoolInput) (float64, bool) {
	if pool == nil {
		return 0, false
	}
	name, zone, ct := n.Labels[v1.LabelInstanceType], n.Labels[v1.LabelTopologyZone], n.Labels[v1.CapacityTypeLabelKey]
	for _, it := range pool.InstanceTypes {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price, true
			}
		}
	}
	return 0, false
}

// movablePods are the pods that must be placed elsewhere when the node goes: not finished, not
// DaemonSet pods (they go with the node) and not static (mirror) pods.
func movablePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod == nil || podkind.IsFinished(pod) || podkind.IsMirror(pod) || podkind.IsDaemonSet(pod) {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// utilization is the larger of the cpu and memory shares of alloc the pods request.
func utilization(pods []*corev1.Pod, alloc corev1.ResourceList) float64 {
	var req [2]float64
	for _, pod := range pods {
		for _, c := range pod.Spec.Containers {
			r := cpuMem(c.Resources.Requests)
			req[0] += r[0]
			req[1] += r[1]
		}
	}
	a := cpuMem(alloc)
	u := 0.0
	if a[0] > 0 {
		u = req[0] / a[0]
	}
	if a[1] > 0 {
		u = math.Max(u, req[1]/a[1])
	}
	return u
}

// spotOptionsBelow counts the plan's instance-type options with an available spot offering in the
// plan's zones cheaper than price.
func spotOptionsBelow(plan *NodeClaimPlan, price float64) int {
	zones := map[string]bool{}
	for _, r := range plan.Requirements {
		if r.Key == v1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
			for _, z := range r.Values {
				zones[z] = true
			}
		}
	}
	n := 0
	for _, it := range plan.InstanceTypeOptions {
		if cheapestSpot(it, zones) < price {
			n++
		}
	}
	return n
}

func cheapestSpot(it *catalog.InstanceType, zones map[string]bool) float64 {
	best := math.Inf(1)
	for _, o := range it.Offerings {
		if o.Available && o.CapacityType == v1.CapacityTypeSpot && (len(zones) == 0 || zones[o.Zone]) {
			best = math.Min(best, o.Price)
		}
	}
	return best
}

// bound is a cheap lower bound on what new nodes for a set's pods must cost, so hopeless sets are
// rejected without a Solve. The pods' cpu and memory that the remaining nodes' free room cannot
// hold (need) must be bought; for dual prices y = λ·v with v ≥ 0 any direction and λ the largest
// value for which no offering's allocatable is worth more than its price at y, every node costs at
// least y·allocatable, so the new nodes cost at least y·need (LP duality). Container requests
// under-count usage, which only loosens the bound.
type bound struct {
	req, free map[string][2]float64 // per node: movable pods' requests; allocatable less all pods' requests
	totalFree [2]float64
	offers    []offerShape // each instance type's allocatable and cheapest available price
}

type offerShape struct {
	alloc [2]float64
	price float64
}

func newBound(p *planner) *bound {
	b := &bound{req: map[string][2]float64{}, free: map[string][2]float64{}}
	for _, n := range p.in.Nodes {
		used := requestVec(n.Pods)
		alloc := cpuMem(n.Allocatable)
		f := [2]float64{math.Max(0, alloc[0]-used[0]), math.Max(0, alloc[1]-used[1])}
		b.free[n.Name] = f
		b.totalFree[0] += f[0]
		b.totalFree[1] += f[1]
	}
	for _, c := range p.cands {
		b.req[c.Node] = requestVec(c.movable)
	}
	for _, pool := range p.in.NodePools {
		for _, it := range pool.InstanceTypes {
			best := math.Inf(1)
			for _, o := range it.Offerings {
				if o.Available {
					best = math.Min(best, o.Price)
				}
			}
			if math.IsInf(best, 1) {
				continue
			}
			a := it.Allocatable()
			b.offers = append(b.offers, offerShape{alloc: cpuMem(a), price: best})
		}
	}
	return b
}

// newNodesCost is the lower bound on the price of new nodes when the nodes of set go (and gone
// are already gone).
func (b *bound) newNodesCost(set []*cand, gone map[string]bool) float64 {
	free := b.totalFree
	var need [2]float64
	for g := range gone {
		f := b.free[g]
		free[0] -= f[0]
		free[1] -= f[1]
	}
	for _, c := range set {
		f, r := b.free[c.Node], b.req[c.Node]
		free[0] -= f[0]
		free[1] -= f[1]
		need[0] += r[0]
		need[1] += r[1]
	}
	need[0], need[1] = math.Max(0, need[0]-free[0]), math.Max(0, need[1]-free[1])
	if need[0] == 0 && need[1] == 0 {
		return 0
	}
	// Any direction v ≥ 0 gives a valid bound; try a fan of cpu:memory mixes (1 cpu ~ 4GiB) and keep
	// the best.
	best := 0.0
	for i := 0; i <= boundDirections; i++ {
		a := float64(i) / boundDirections
		v := [2]float64{a / 1000, (1 - a) / (4 << 30)}
		lambda := math.Inf(1)
		for _, o := range b.offers {
			if w := v[0]*o.alloc[0] + v[1]*o.alloc[1]; w > 0 {
				lambda = math.Min(lambda, o.price/w)
			}
		}
		if !math.IsInf(lambda, 1) {
			best = math.Max(best, lambda*(v[0]*need[0]+v[1]*need[1]))
		}
	}
	return best
}

const boundDirections = 16

func requestVec(pods []*corev1.Pod) [2]float64 {
	var out [2]float64
	for _, pod := range pods {
		if pod == nil || podkind.IsFinished(pod) {
			continue
		}
		for _, c := range pod.Spec.Containers {
			r := cpuMem(c.Resources.Requests)
			out[0] += r[0]
			out[1] += r[1]
		}
	}
	return out
}
