package solver_test

import (
	"testing"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/scenario"
)

// loadScenario reads a family-p input through test/scenario (the loader bench/upstream shares).
func loadScenario(tb testing.TB, dir string) solver.Input {
	tb.Helper()
	c, its := readScenario(tb, dir)
	return buildScenario(tb, c, its)
}

// readScenario reads a family-p input's objects and catalog.
func readScenario(tb testing.TB, dir string) (snapshot.Cluster, []*catalog.InstanceType) {
	tb.Helper()
	c, its, err := scenario.Read(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return c, its
}

// buildScenario is the snapshot of c over the catalog its.
func buildScenario(tb testing.TB, c snapshot.Cluster, its []*catalog.InstanceType) solver.Input {
	tb.Helper()
	in, err := scenario.Build(c, its)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}
