package karpentermetrics

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

// fixture is where the main module's metric-name test reads upstream's series.
const fixture = "../../../controllers/metrics/testdata/karpenter-v1.15-series.json"

var update = flag.Bool("update", false, "rewrite "+fixture)

// TestFixtureIsUpstreams regenerates the list from Karpenter's own registrations and requires the
// committed fixture to equal it, so the fixture cannot drift from upstream.
func TestFixtureIsUpstreams(t *testing.T) {
	series, err := Upstream()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) < 40 {
		t.Fatalf("only %d karpenter_ series found; the blank imports no longer reach upstream's registrations", len(series))
	}
	want, err := json.MarshalIndent(series, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(fixture, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("%v (run: go test ./karpentermetrics -run TestFixtureIsUpstreams -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from Karpenter's registrations; regenerate with -update", fixture)
	}
}
