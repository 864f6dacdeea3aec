package solver_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
	"github.com/joist-dev/joist/solver/verify"
)

// TestQualityReport prints cost ÷ bound, a plan hash and the pass timings of the 23 quality
// inputs (family p, the eight variants, mixed/uniform/diverse 1k, the four EC2-model shapes at
// 1k). It is a tool for comparing builds, not a check: JOIST_QUALITY=1 runs it
// (JOIST_QUALITY_PASSES=1 also prints every pass).
func TestQualityReport(t *testing.T) {
	if os.Getenv("JOIST_QUALITY") == "" {
		t.Skip("JOIST_QUALITY=1 runs the quality report")
	}
	type named struct {
		name string
		in   func() solver.Input
	}
	var ins []named
	for _, name := range familyP {
		ins = append(ins, named{"family-p/" + name, func() solver.Input {
			return loadScenario(t, filepath.Join("testdata", "realistic-p", name))
		}})
	}
	for seed := 1; seed <= variantCount; seed++ {
		ins = append(ins, named{fmt.Sprintf("variant/%d", seed), func() solver.Input {
			_, in := familyPVariant(t, seed)
			return in
		}})
	}
	for _, s := range benchdata.Shapes {
		ins = append(ins, named{fmt.Sprintf("%s/1000", s), func() solver.Input { return benchdata.MustInput(s, 1000) }})
	}
	for _, s := range benchdata.RealisticShapes {
		ins = append(ins, named{fmt.Sprintf("%s/1000", s), func() solver.Input { return benchdata.MustInput(s, 1000) }})
	}
	var fp, vs float64
	only := os.Getenv("JOIST_QUALITY_ONLY") // a substring of the names to run (the means then cover those only)
	for _, n := range ins {
		if only != "" && !strings.Contains(n.name, only) {
			continue
		}
		in := n.in()
		res := solver.SolveWith(in, solver.Options{Now: time.Now})
		ok := "valid"
		if err := verify.Verify(in, res); err != nil {
			ok = "INVALID: " + err.Error()
		}
		r := res.CostPerHour / res.LowerBoundPerHour
		switch {
		case len(n.name) > 9 && n.name[:9] == "family-p/":
			fp += r
		case len(n.name) > 8 && n.name[:8] == "variant/":
			vs += r
		}
		h := sha256.New()
		var lines []string
		for _, c := range res.NewNodeClaims {
			var pods []string
			for _, p := range c.Pods {
				pods = append(pods, p.Namespace+"/"+p.Name)
			}
			sort.Strings(pods)
			lines = append(lines, fmt.Sprint(c.NodePool, c.InstanceType.Name, c.Offering, pods))
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Fprintln(h, l)
		}
		var total time.Duration
		for _, p := range res.Passes {
			total += p.Duration
		}
		fmt.Printf("Q %-28s %7.4f  $%9.4f  bound %9.4f  nodes %4d  unsched %d  %x  %6.1f ms  %s\n", n.name, r, res.CostPerHour, res.LowerBoundPerHour,
			len(res.NewNodeClaims), len(res.Unschedulable), h.Sum(nil)[:4], float64(total.Microseconds())/1000, ok)
		if os.Getenv("JOIST_QUALITY_PASSES") != "" {
			for _, p := range res.Passes {
				fmt.Printf("    %-16s ran=%-5v %7.2f ms  %9.4f → %9.4f  work %.3g  %s %s\n", p.Name, p.Ran, float64(p.Duration.Microseconds())/1000, p.CostBefore, p.CostAfter, p.Work, p.Note, p.Shortfall)
			}
		}
	}
	fmt.Printf("Q family-p mean %.4f   variants mean %.4f\n", fp/float64(len(familyP)), vs/variantCount)
}
