package disruptionpolicy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestBudgetNodes(t *testing.T) {
	for _, tc := range []struct {
		nodes string
		total int
		want  int
	}{
		{"10%", 0, 0}, {"10%", 1, 1}, {"10%", 10, 1}, {"10%", 11, 2}, {"100%", 7, 7},
		{"0", 10, 0}, {"3", 10, 3}, {"0%", 10, 0}, {"bad", 10, 0},
	} {
		if got := budgetNodes(tc.nodes, tc.total); got != tc.want {
			t.Errorf("budgetNodes(%q, %d) = %d, want %d", tc.nodes, tc.total, got, tc.want)
		}
	}
}

func TestAllowedDisruptions(t *testing.T) {
	noon := time.Date(2026, 12, 1, 12, 30, 0, 0, time.UTC)
	window := func(nodes, schedule string, d time.Duration, reasons ...v1.DisruptionReason) v1.Budget {
		return v1.Budget{Nodes: nodes, Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
	}
	for _, tc := range []struct {
		name       string
		budgets    []v1.Budget
		reason     v1.DisruptionReason
		total      int
		disrupting int
		want       int
	}{
		{name: "default 10% of 20", total: 20, reason: v1.DisruptionReasonEmpty, want: 2},
		{name: "disrupting count against it", budgets: []v1.Budget{{Nodes: "3"}}, total: 20, disrupting: 2, reason: v1.DisruptionReasonDrifted, want: 1},
		{name: "never negative", budgets: []v1.Budget{{Nodes: "1"}}, total: 20, disrupting: 4, reason: v1.DisruptionReasonDrifted, want: 0},
		{name: "most restrictive wins", budgets: []v1.Budget{{Nodes: "50%"}, {Nodes: "2"}}, total: 20, reason: v1.DisruptionReasonUnderutilized, want: 2},
		{name: "reason-scoped budget applies to its reason", budgets: []v1.Budget{{Nodes: "5"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}, total: 20, reason: v1.DisruptionReasonDrifted, want: 0},
		{name: "reason-scoped budget leaves others", budgets: []v1.Budget{{Nodes: "5"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}, total: 20, reason: v1.DisruptionReasonEmpty, want: 5},
		{name: "window active: business hours forbid", budgets: []v1.Budget{{Nodes: "100%"}, window("0", "0 9 * * *", 8*time.Hour)}, total: 10, reason: v1.DisruptionReasonUnderutilized, want: 0},
		{name: "window inactive", budgets: []v1.Budget{{Nodes: "100%"}, window("0", "0 14 * * *", time.Hour)}, total: 10, reason: v1.DisruptionReasonUnderutilized, want: 10},
		{name: "window ended a minute ago", budgets: []v1.Budget{window("0", "29 11 * * *", time.Hour)}, total: 10, reason: v1.DisruptionReasonEmpty, want: 10},
		{name: "macro @daily active in first hour only", budgets: []v1.Budget{window("0", "@daily", time.Hour)}, total: 10, reason: v1.DisruptionReasonEmpty, want: 10},
		{name: "invalid schedule blocks", budgets: []v1.Budget{window("5", "not a cron", time.Hour)}, total: 10, reason: v1.DisruptionReasonEmpty, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: tc.budgets}}}
			if got := AllowedDisruptions(np, tc.reason, tc.total, tc.disrupting, noon); got != tc.want {
				t.Fatalf("allowed = %d, want %d", got, tc.want)
			}
		})
	}
}
