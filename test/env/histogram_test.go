package env_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/joist-dev/joist/test/env"
)

// HistogramP99 reads the parsed buckets: 99 of 100 samples of "fast" are ≤ 0.1 s, "slow" has 2 of 100
// above its last finite bucket, "idle" has no samples.
func TestHistogramP99ReadsTheBuckets(t *testing.T) {
	text := `# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="fast",le="0.05"} 90
controller_runtime_reconcile_time_seconds_bucket{controller="fast",le="0.1"} 99
controller_runtime_reconcile_time_seconds_bucket{controller="fast",le="1"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="fast",le="+Inf"} 100
controller_runtime_reconcile_time_seconds_sum{controller="fast"} 3
controller_runtime_reconcile_time_seconds_count{controller="fast"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="slow",le="0.05"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="slow",le="0.1"} 50
controller_runtime_reconcile_time_seconds_bucket{controller="slow",le="1"} 98
controller_runtime_reconcile_time_seconds_bucket{controller="slow",le="+Inf"} 100
controller_runtime_reconcile_time_seconds_sum{controller="slow"} 90
controller_runtime_reconcile_time_seconds_count{controller="slow"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="idle",le="0.05"} 0
controller_runtime_reconcile_time_seconds_bucket{controller="idle",le="+Inf"} 0
controller_runtime_reconcile_time_seconds_sum{controller="idle"} 0
controller_runtime_reconcile_time_seconds_count{controller="idle"} 0
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := env.HistogramP99(families, "controller_runtime_reconcile_time_seconds", "controller")
	want := map[string]time.Duration{"fast": 100 * time.Millisecond, "slow": -1}
	if len(got) != len(want) || got["fast"] != want["fast"] || got["slow"] != want["slow"] {
		t.Fatalf("p99 = %v, want %v", got, want)
	}
}
