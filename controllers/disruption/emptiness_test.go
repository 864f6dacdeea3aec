package disruption

import "testing"

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
