package disruption

import (
	"testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// bigAlone is reorderCluster's node "big" (made a c-32x, running three 2-vCPU pods) alone, of capacity
// type ct, its pool allowing every instance type of the catalog in that capacity type: its pods fit a cheaper single
// node (of more than SpotToSpotMinOptions types) and nowhere else.
func bigAlone(ct string) (solver.ConsolidationInput, consolidationCandidates) {
	in := reorderCluster()
	in.Nodes = in.Nodes[:1]
	in.NodePools[0].InstanceTypes = catalog.Default()
	np := in.NodePools[0].NodePool.DeepCopy()
	np.Spec.Template.Spec.Requirements = np.Spec.Template.Spec.Requirements[1:] // every type
	np.Spec.Template.Spec.Requirements[0].Values = []string{ct}                 // of this capacity type
	in.NodePools[0].NodePool = np
	in.Nodes[0].Labels[v1.CapacityTypeLabelKey] = ct
	// A c-32x: more than SpotToSpotMinOptions types are cheaper (a c-16x has 13 cheaper in spot).
	it := catalogType("c-32x-amd64-linux")
	for k, v := range it.Labels {
		in.Nodes[0].Labels[k] = v
	}
	in.Nodes[0].Labels[v1.LabelInstanceType] = it.Name
	in.Nodes[0].Allocatable = it.Allocatable()
	cands := consolidationCandidates{preferred: in.Candidates[:1]}
	in.Candidates = nil
	return in, cands
}

// The scale-down bench's run 2 (docs/disruption.md "Session 20") ended 1.83× above the plan with a
// c-96x spot node left running 16 pods: every later pass logged only "no command from candidate
// list". The spot-to-spot rule (off, as in Karpenter) refuses the one cheaper spot node its pods
// need; the debug log now says so with the command the rule refused.
func TestNoCommandNamesTheSpotToSpotRefusal(t *testing.T) {
	in, cands := bigAlone(v1.CapacityTypeOnDemand)
	onDemand := planConsolidationStep(in, cands, nil, false)
	if ch := onDemand.command(); !ch.ok || len(ch.cmd.Replacements) != 1 {
		t.Fatalf("on-demand big: want its replace by one node (the fixture's cheaper arrangement), got %+v", ch)
	}
	in, cands = bigAlone(v1.CapacityTypeSpot)
	step := planConsolidationStep(in, cands, nil, false)
	if ch := step.command(); ch.ok {
		t.Fatalf("spot big with spot-to-spot off: want no command, got %v", ch.cmd.Delete)
	}
	cmd, ok := step.spotRuleRefusal()
	if !ok || len(cmd.Delete) != 1 || cmd.Delete[0] != "big" || len(cmd.Replacements) != 1 || cmd.SavingsPerHour <= 0 {
		t.Fatalf("spot-rule refusal: got %+v (ok %t), want the replace of big by one spot node", cmd, ok)
	}
	// With the rule on there is nothing it refused.
	in.SpotToSpot = true
	step = planConsolidationStep(in, cands, nil, false)
	if _, ok := step.spotRuleRefusal(); ok {
		t.Error("spot-to-spot on: no refusal to report")
	}
}
