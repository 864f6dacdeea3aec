package karpenteradoption

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/joist-dev/joist/catalog"
)

const fixture = "../../../test/e2e/testdata/karpenter-adoption.yaml"

var update = flag.Bool("update", false, "rewrite "+fixture)

// TestFixtureIsKarpenters regenerates the adoption fixture with Karpenter's own functions and requires
// the committed file to equal it, so the fixture cannot drift from upstream.
func TestFixtureIsKarpenters(t *testing.T) {
	want, err := YAML(catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(fixture, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("%v (run: go test ./karpenteradoption -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what Karpenter's functions produce; regenerate with -update", fixture)
	}
}
