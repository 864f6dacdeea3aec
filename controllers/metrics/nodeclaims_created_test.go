package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCountNodeClaimCreated(t *testing.T) {
	before := testutil.ToFloat64(nodeClaimsCreated.WithLabelValues("drifted", "general", "false"))
	CountNodeClaimCreated("general", "drifted")
	if got := testutil.ToFloat64(nodeClaimsCreated.WithLabelValues("drifted", "general", "false")) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_created_total{reason=drifted,nodepool=general} rose by %v, want 1", got)
	}
}
