package disruption

import (
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// idleRecheck is how long a pass that found nothing to do is trusted while nothing it read changed:
// what it does not read from the cluster (offerings, prices) may change the plan, so it is redone
// at least this often.
const idleRecheck = 5 * time.Minute

// idleMemo remembers the last pass that evaluated and found nothing to do.
type idleMemo struct {
	fingerprint uint64
	at          time.Time
}

// fingerprint hashes everything a decision depends on that a pass reads: the resource version of
// every object (pods, nodes, claims, pools, PDBs, namespaces, guardrails), each member's
// time-dependent verdict (consolidatable, blocked, drift), the budgets and the drift rotation. Two
// passes with the same fingerprint plan the same.
// The nodes held as destinations of moves (held), the moves remembered and the fresh replacements
// count too: they change the candidates without any object changing.
func (c *Controller) fingerprint(cl *cluster, members []*member, budgets map[string]solver.DisruptionBudget, held map[string]bool) uint64 {
	h := fnv.New64a()
	write := func(ss ...string) {
		for _, s := range ss {
			_, _ = h.Write([]byte(s))
			_, _ = h.Write([]byte{0})
		}
	}
	_, _ = h.Write(cl.readVersions)
	_, _ = h.Write(cl.refreshVersions)
	for _, m := range members {
		write(m.claim.Name, strconv.FormatBool(m.consolidatable), m.blocked, m.driftReason)
	}
	pools := make([]string, 0, len(budgets))
	for p := range budgets {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, p := range pools {
		for _, r := range disruptionpolicy.Reasons {
			write(p, string(r), strconv.Itoa(budgets[p][r]))
		}
	}
	heldNames := make([]string, 0, len(held))
	for n := range held {
		heldNames = append(heldNames, n)
	}
	sort.Strings(heldNames)
	write(heldNames...)
	c.mu.Lock()
	backedOff := 0
	for _, until := range c.backoff {
		if c.clock.Now().Before(until) {
			backedOff++
		}
	}
	fresh := 0
	for _, executed := range c.movedOnto {
		if c.clock.Since(executed) < freshHold {
			fresh++
		}
	}
	write(c.lastDriftEvaluated, strconv.Itoa(len(c.commands)), strconv.Itoa(len(c.moves)), strconv.Itoa(backedOff), strconv.Itoa(fresh))
	c.mu.Unlock()
	return h.Sum64()
}

// unchangedSinceIdle reports whether the last evaluated pass found nothing and nothing it depends
// on changed since, so this pass may skip the snapshot and the plan.
func (c *Controller) unchangedSinceIdle(fp uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle.fingerprint == fp && !c.idle.at.IsZero() && c.clock.Since(c.idle.at) < idleRecheck
}

func (c *Controller) rememberIdle(fp uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = idleMemo{fingerprint: fp, at: c.clock.Now()}
}

// versionHash accumulates objects' names and resource versions while a pass reads them,
// independently of the order the cache lists them in (a sum of per-object hashes).
type versionHash struct{ sum, n uint64 }

func newVersionHash() *versionHash { return &versionHash{} }

func (v *versionHash) add(kind, name, version string, deleting bool) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(kind + "/" + name + "@" + version + strconv.FormatBool(deleting)))
	v.sum += h.Sum64()
	v.n++
}

// Sum is the accumulated hash as bytes (b is ignored, as a hash.Hash's Sum would append to it).
func (v *versionHash) Sum([]byte) []byte {
	return []byte(strconv.FormatUint(v.sum, 16) + "/" + strconv.FormatUint(v.n, 10))
}
