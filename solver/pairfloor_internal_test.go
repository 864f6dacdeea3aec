package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// TestPairTypeFloorsChangeNoRebalance: the split pass and rebalancePair pass over a candidate type when the
// cheapest covers of what the largest candidate and that type leave of the pair already cost the
// best re-split so far (part B is at least the pair's use beyond part A's type, part A at least
// its use beyond the largest candidate; for the split pass, part A at least the cheapest type).
// That is a proof, so the split and rebalanced plans are those of
// pricing every candidate type's splits — and the floors must fire, or the test proves nothing.
func TestPairTypeFloorsChangeNoRebalance(t *testing.T) {
	floored, splitFloored := 0, 0
	for seed := uint64(1); seed <= 12; seed++ {
		in := pairFloorInput(seed, 60+int(seed)*15)
		run := func(all bool) (float64, []string, int, [2]int) {
			s := placed(in, false)
			s.noPairTypeFloor = all
			memo := newPassMemo(s.classes)
			s.improve(memo)
			var contents []string
			for _, n := range s.open {
				if len(n.pods) > 0 {
					contents = append(contents, contentKey(n, memo.rank))
				}
			}
			contents = append(contents, fmt.Sprintf("split $%.6f/h", s.planCost()))
			s.rebalance(memo)
			s.drain()
			s.rebalance(memo)
			for _, n := range s.open {
				if len(n.pods) > 0 {
					contents = append(contents, contentKey(n, memo.rank))
				}
			}
			return s.planCost(), contents, s.tally.pairsPriced, [2]int{s.tally.pairTypesFloored, s.tally.splitTypesFloored}
		}
		cost, contents, priced, fl := run(false)
		costAll, contentsAll, pricedAll, flAll := run(true)
		if flAll != [2]int{} {
			t.Fatalf("seed %d: %v types floored with the floors off", seed, flAll)
		}
		if cost != costAll || fmt.Sprint(contents) != fmt.Sprint(contentsAll) || priced != pricedAll {
			t.Fatalf("seed %d: with the floors $%.4f/h, %d nodes, %d pairs priced; pricing every type $%.4f/h, %d nodes, %d pairs", seed, cost, len(contents), priced, costAll, len(contentsAll), pricedAll)
		}
		floored += fl[0]
		splitFloored += fl[1]
	}
	if floored == 0 || splitFloored == 0 {
		t.Fatalf("candidate types floored: %d by rebalance, %d by the split pass; the test proves nothing where none were", floored, splitFloored)
	}
	t.Logf("candidate types floored over 12 inputs: %d by rebalance, %d by the split pass", floored, splitFloored)
}

// pairFloorInput is n pods of random cpu/memory shapes over the default catalog, one pool.
func pairFloorInput(seed uint64, n int) Input {
	rng := rand.New(rand.NewPCG(seed, 33))
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "test", Kind: "TestNodeClass", Name: "default"}
	in := Input{NodePools: []NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}}}
	shapes := 3 + rng.IntN(8)
	for i := range n {
		k := rng.IntN(shapes)
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%04d", i), Namespace: "default", Labels: map[string]string{"app": fmt.Sprint(k)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100+(k*7%12)*250), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(256+(k*5%12)*512)<<20, resource.BinarySI),
			}}}}},
		})
	}
	return in
}
