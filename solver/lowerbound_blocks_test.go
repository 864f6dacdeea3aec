package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// TestBoundByBlocksHoldsAgainstEnumeration: on small random inputs with two NodePools whose pods
// each select one pool (so the assignment LP is block-diagonal by pool), the bound solved pool by
// pool is never above the cheapest whole-node plan (every partition of the pods into nodes, each
// node on its pool's cheapest type that holds it, enumerated), and is the bound of the LP solved
// in one piece.
func TestBoundByBlocksHoldsAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 21))
	tight, blocked := 0, 0
	const trials = 150
	for trial := range trials {
		type typ struct {
			cpu, mem int64 // milli-cpu, MiB
			price    float64
		}
		pools := []string{"a", "b"}
		types := map[string][]typ{}
		var in solver.Input
		for _, name := range pools {
			var its []*catalog.InstanceType
			for i := range 2 + rng.IntN(3) {
				ty := typ{cpu: int64(1+rng.IntN(8)) * 1000, mem: int64(1+rng.IntN(16)) * 1024, price: 0.02 + rng.Float64()}
				types[name] = append(types[name], ty)
				its = append(its, instanceType(fmt.Sprintf("%s-t%d", name, i), fmt.Sprintf("%dm", ty.cpu), fmt.Sprintf("%dMi", ty.mem), ty.price, onlyOnDemand))
			}
			in.NodePools = append(in.NodePools, poolInput(nodePool(name), its))
		}
		type pd struct {
			pool     string
			cpu, mem int64
		}
		var ps []pd
		for i := range 3 + rng.IntN(5) {
			p := pd{pool: pools[rng.IntN(2)], cpu: int64(1+rng.IntN(16)) * 250, mem: int64(1+rng.IntN(16)) * 512}
			fits := false
			for _, ty := range types[p.pool] {
				fits = fits || (p.cpu <= ty.cpu && p.mem <= ty.mem)
			}
			if !fits {
				continue
			}
			ps = append(ps, p)
			in.Pods = append(in.Pods, pod(fmt.Sprintf("p%d", i), fmt.Sprintf("%dm", p.cpu), fmt.Sprintf("%dMi", p.mem), nodeSelector(v1.NodePoolLabelKey, p.pool)))
		}
		if len(ps) == 0 {
			continue
		}
		// The cheapest plan: every partition of the pods into nodes (restricted growth strings).
		nodeCost := func(members []int) float64 {
			var cpu, mem int64
			pool := ps[members[0]].pool
			for _, i := range members {
				if ps[i].pool != pool {
					return math.Inf(1)
				}
				cpu, mem = cpu+ps[i].cpu, mem+ps[i].mem
			}
			best := math.Inf(1)
			for _, ty := range types[pool] {
				if cpu <= ty.cpu && mem <= ty.mem {
					best = min(best, ty.price)
				}
			}
			return best
		}
		opt := math.Inf(1)
		assign := make([]int, len(ps))
		var rec func(i, blocks int)
		rec = func(i, blocks int) {
			if i == len(ps) {
				cost := 0.0
				for b := 0; b < blocks && cost < opt; b++ {
					var members []int
					for j, a := range assign {
						if a == b {
							members = append(members, j)
						}
					}
					cost += nodeCost(members)
				}
				opt = min(opt, cost)
				return
			}
			for b := 0; b <= blocks; b++ {
				assign[i] = b
				rec(i+1, max(blocks, b+1))
			}
		}
		rec(0, 0)
		byBlocks, blocks, whole := solver.AssignmentBounds(in)
		if byBlocks > opt*(1+1e-9) {
			t.Fatalf("trial %d: bound %.6f above the cheapest plan %.6f (pods %+v, types %+v)", trial, byBlocks, opt, ps, types)
		}
		if math.Abs(byBlocks-whole) > 1e-6*whole {
			t.Fatalf("trial %d: bound %.9f pool by pool, %.9f with the LP whole", trial, byBlocks, whole)
		}
		if blocks > 0 {
			blocked++
		}
		if byBlocks > 0.9*opt {
			tight++
		}
	}
	if blocked < trials/2 {
		t.Fatalf("the LP was solved pool by pool on %d of %d inputs: the test proves little", blocked, trials)
	}
	if tight == 0 {
		t.Fatalf("the bound was never within 10%% of the cheapest plan: the test proves nothing")
	}
	t.Logf("%d of %d inputs solved pool by pool; bound within 10%% of the cheapest plan on %d", blocked, trials, tight)
}
