package nodeclaim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestDisruptionReason(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		want       string
	}{
		{"deleted by a user", nil, ""},
		{"empty", []metav1.Condition{{Type: v1.ConditionTypeEmpty, Status: metav1.ConditionTrue}}, "Empty"},
		{"empty cleared", []metav1.Condition{{Type: v1.ConditionTypeEmpty, Status: metav1.ConditionFalse}}, ""},
		{"drifted beats empty", []metav1.Condition{{Type: v1.ConditionTypeEmpty, Status: metav1.ConditionTrue}, {Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue}}, "Drifted"},
		{"consolidatable", []metav1.Condition{{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue}}, "Underutilized"},
		{"disrupting names the reason", []metav1.Condition{{Type: v1.ConditionTypeDisrupting, Status: metav1.ConditionTrue, Reason: "Expired"}, {Type: v1.ConditionTypeEmpty, Status: metav1.ConditionTrue}}, "Expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{Status: v1.NodeClaimStatus{Conditions: tc.conditions}}
			if got := DisruptionReason(nc); got != tc.want {
				t.Errorf("DisruptionReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDisruptionReasonExpired(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Spec: v1.NodeClaimSpec{ExpireAfter: v1.MustParseNillableDuration("1h")}}
	early := metav1.NewTime(created.Add(59 * time.Minute))
	nc.DeletionTimestamp = &early
	if got := DisruptionReason(nc); got != "" {
		t.Errorf("deleted before expireAfter: reason %q, want none", got)
	}
	due := metav1.NewTime(created.Add(time.Hour))
	nc.DeletionTimestamp = &due
	if got := DisruptionReason(nc); got != "Expired" {
		t.Errorf("deleted at expireAfter: reason %q, want Expired", got)
	}
}

func TestDisruptedLabelValues(t *testing.T) {
	for in, want := range map[string]string{"WhenEmptyOrUnderutilized": "when_empty_or_underutilized", "Drifted": "drifted", "": ""} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct {
		tgp  *metav1.Duration
		want string
	}{{nil, "graceful"}, {&metav1.Duration{Duration: time.Hour}, "eventual"}, {&metav1.Duration{}, "forceful"}} {
		nc := &v1.NodeClaim{Spec: v1.NodeClaimSpec{TerminationGracePeriod: tc.tgp}}
		if got := terminationMode(nc); got != tc.want {
			t.Errorf("terminationMode(%v) = %q, want %q", tc.tgp, got, tc.want)
		}
	}
}
