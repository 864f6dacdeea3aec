package quantity

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCheckText(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"4": "", "500m": "", "8Gi": "", "1E": "", "1e30": "", "1e-30": "", "2.5e3": "", "abc": "",
		"1e31":                   "exponent beyond e±30",
		"1e-31":                  "exponent beyond e±30",
		"1e99999999":             "exponent beyond e±30",
		"1e99999999999999999999": "exponent beyond e±30",
		strings.Repeat("9", 65):  "longer than 64 characters",
	} {
		got := CheckText(text)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("CheckText(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestCheckIsCheapForHugeExponents: a quantity the apiserver stores from a pod, "1e9999999", takes
// over a second to compare with another; Check must not.
func TestCheckIsCheapForHugeExponents(t *testing.T) {
	t.Parallel()
	huge := resource.MustParse("1e9999999")
	start := time.Now()
	for range 1000 {
		if Check(huge) == "" {
			t.Fatal("1e9999999 passed")
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 checks took %s; Check must not do arithmetic on the quantity", d)
	}
	for _, ok := range []string{"0", "100m", "10Pi", "1e30", "-1e30", "100000"} {
		if msg := Check(resource.MustParse(ok)); msg != "" {
			t.Errorf("Check(%s) = %q, want accepted", ok, msg)
		}
	}
	if msg := Check(resource.MustParse("-1e31")); !strings.Contains(msg, "beyond 1e30") {
		t.Errorf("Check(-1e31) = %q", msg)
	}
}

func TestCheckList(t *testing.T) {
	t.Parallel()
	list := corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1e40"), "b": resource.MustParse("1e50")}
	if n, why := CheckList(list); n != "b" || why == "" {
		t.Fatalf("CheckList = %q, %q; want the first bad name, b", n, why)
	}
	if n, why := CheckList(corev1.ResourceList{"cpu": resource.MustParse("1")}); n != "" || why != "" {
		t.Fatalf("CheckList of a good list = %q, %q", n, why)
	}
}
