package solver

import (
	"sort"

	"github.com/joist-dev/joist/requirements"
)

func uniqSorted(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := append([]string(nil), values...)
	sort.Strings(out)
	w := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[w-1] {
			out[w] = out[i]
			w++
		}
	}
	return out[:w]
}

func containsSorted(vals []string, v string) bool {
	i := sort.SearchStrings(vals, v)
	return i < len(vals) && vals[i] == v
}

func filterValues(vals []string, keep func(string) bool) []string {
	var out []string
	for _, v := range vals {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// maskFor turns a requirement on zone or capacity type into a mask over the universe.
func maskFor(r requirements.Requirement, present bool, universe []string) uint64 {
	if !present {
		return ^uint64(0)
	}
	var m uint64
	for i, v := range universe {
		if r.Has(v) {
			m |= 1 << uint(i)
		}
	}
	return m
}
