package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// TestRepack: zone spread forces nodes into the dearer zones b and c and amd64-only pods need
// their own nodes; repacking sizes those for their own pods and gives pods free to go anywhere
// the room they leave, then balanced nodes of their own.
func TestRepack(t *testing.T) {
	ps := zoneSpread("web", 60, "250m", "512Mi")
	ps = append(ps, zoneSpread("search", 15, "2", "4Gi")...)
	ps = append(ps, zoneSpread("cache", 9, "500m", "4Gi")...)
	ps = append(ps, pods(10, "video", "4", "8Gi", label("app", "video"), nodeSelector(v1.LabelArch, "amd64"))...)
	ps = append(ps, pods(20, "batch", "2", "8Gi", label("app", "batch"))...)
	ps = append(ps, pods(40, "cart", "250m", "256Mi", label("app", "cart"))...)
	in := solver.Input{Pods: ps, NodePools: []solver.NodePoolInput{{
		NodePool: benchdata.NodePool(benchdata.Uniform), InstanceTypes: benchdata.CatalogInstanceTypes()}}}
	r := solve(t, in)
	mustPlaceAll(t, r)
	// Placement alone (first fit in class order, then splits) costs 1.21 × the bound here.
	if ratio := r.CostPerHour / r.LowerBoundPerHour; ratio > 1.12 {
		t.Errorf("cost %.4f is %.3f × the lower bound %.4f, want ≤ 1.12\n%s", r.CostPerHour, ratio, r.LowerBoundPerHour, summary(r))
	}
	for _, nc := range r.NewNodeClaims {
		for _, p := range nc.Pods {
			if p.Labels["app"] == "video" && nc.InstanceType.Labels[v1.LabelArch] != "amd64" {
				t.Errorf("pod %s on %s", p.Name, nc.InstanceType.Name)
			}
		}
	}
}

func zoneSpread(app string, n int, cpu, mem string) []*corev1.Pod {
	sel := map[string]string{"app": app}
	return pods(n, app, cpu, mem, label("app", app), spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, sel))
}
