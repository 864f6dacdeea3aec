package disruptionpolicy_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/disruptionpolicy/pdbcases"
)

// TestPDBCases runs the shared PDB table against the pure policy: the node is protected by exactly
// the PDB the case names, and the verdict names it.
func TestPDBCases(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range pdbcases.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			pod := tc.NewPod("web-0", "node-a")
			got := disruptionpolicy.Protect(nil, nil, []*corev1.Pod{pod}, disruptionpolicy.NewPDBs(tc.PDBPointers()), now)
			if tc.BlockedBy == "" {
				if got != nil {
					t.Fatalf("want no protection, got %q", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("want protection by PodDisruptionBudget %s, got none", tc.BlockedBy)
			}
			if got.Kind != disruptionpolicy.KindPodDisruptionBudget || got.Namespace+"/"+got.Name != tc.BlockedBy || !got.PodLevel {
				t.Errorf("protection = %s %s/%s (podLevel %t), want PodDisruptionBudget %s", got.Kind, got.Namespace, got.Name, got.PodLevel, tc.BlockedBy)
			}
			if !strings.Contains(got.Message, tc.BlockedBy) || !strings.Contains(got.Message, "shop/web-0") {
				t.Errorf("message %q names neither the PDB %s nor the pod", got.Message, tc.BlockedBy)
			}
		})
	}
}
