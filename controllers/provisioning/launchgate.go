package provisioning

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// Launch backoff: after a NodeClaim create for a pool fails, the pool sits out for launchBackoffInitial,
// doubling per further failure with the same reason up to launchBackoffMax. When the hold ends, one
// create (a probe) goes through; a success clears the pool, a failure holds it again. A broken pool
// thus costs one create per hold (at most 6 a minute, at the 10 s start) while the solver plans its
// pods onto the pools that work.
const (
	launchBackoffInitial = 10 * time.Second
	launchBackoffMax     = 5 * time.Minute
)

// launchGate decides which NodePools the provisioner may launch from: not those whose template would
// make every NodeClaim invalid, and not those backing off after failed creates.
type launchGate struct {
	clock   clock.Clock
	backoff *flowcontrol.Backoff // keyed pool + "/" + failure reason

	mu    sync.Mutex
	pools map[string]*poolHold
}

// poolHold is a pool whose last create failed.
type poolHold struct {
	until   time.Time
	err     error
	probing bool // the one create allowed once the hold ended is in flight
	keys    map[string]bool
}

func newLaunchGate(clk clock.Clock) *launchGate {
	return &launchGate{clock: clk, backoff: flowcontrol.NewFakeBackOff(launchBackoffInitial, launchBackoffMax, clk),
		pools: map[string]*poolHold{}}
}

// heldPool is a pool the gate keeps out of a solve, and why.
type heldPool struct {
	pool    *v1.NodePool
	message string
}

// admit returns the pools a solve may plan onto and the ones it keeps out.
func (g *launchGate) admit(pools []solver.NodePoolInput) (kept []solver.NodePoolInput, held []heldPool) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, pi := range pools {
		if problems := templateProblems(pi.NodePool); len(problems) > 0 {
			held = append(held, heldPool{pool: pi.NodePool, message: fmt.Sprintf(
				"not launching from NodePool %s: %s; fix spec.template.metadata", pi.NodePool.Name, strings.Join(problems, "; "))})
			continue
		}
		if h := g.pools[pi.NodePool.Name]; h != nil && (now.Before(h.until) || h.probing) {
			held = append(held, heldPool{pool: pi.NodePool, message: fmt.Sprintf(
				"NodeClaim creates for NodePool %s are failing (%v); next attempt in %s, other pools take its pods meanwhile",
				pi.NodePool.Name, h.err, h.until.Sub(now).Round(time.Second))})
			continue
		}
		kept = append(kept, pi)
	}
	return kept, held
}

// startCreate takes the pool's turn to create, and reports whether it got it: a create may go ahead
// now, but after a hold only one (the probe), which this marks as under way.
func (g *launchGate) startCreate(pool string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.pools[pool]
	switch {
	case h == nil:
		return true
	case h.probing || g.clock.Now().Before(h.until):
		return false
	}
	h.probing = true
	return true
}

// observe records the outcome of a create for pool.
func (g *launchGate) observe(pool string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.pools[pool]
	if err == nil {
		if h != nil {
			for k := range h.keys {
				g.backoff.Reset(k)
			}
			delete(g.pools, pool)
		}
		return
	}
	if h == nil {
		h = &poolHold{keys: map[string]bool{}}
		g.pools[pool] = h
	}
	key := pool + "/" + string(apierrors.ReasonForError(err))
	now := g.clock.Now()
	g.backoff.Next(key, now)
	h.keys[key] = true
	h.err, h.probing = err, false
	h.until = now.Add(g.backoff.Get(key))
}

// nextRetry is how long until the earliest hold ends; ok is false when no pool is held.
func (g *launchGate) nextRetry() (d time.Duration, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	for _, h := range g.pools {
		if left := h.until.Sub(now); !ok || left < d {
			d, ok = max(left, 0), true
		}
	}
	return d, ok
}

// templateProblems lists what in a pool's template would make the apiserver refuse every NodeClaim
// launched from it: label values and keys (the CRD checks keys, not values, which CEL cannot afford).
func templateProblems(np *v1.NodePool) []string {
	var out []string
	keys := make([]string, 0, len(np.Spec.Template.Labels))
	for k := range np.Spec.Template.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			out = append(out, fmt.Sprintf("label key %q is invalid: %s", k, strings.Join(errs, ", ")))
		}
		if errs := validation.IsValidLabelValue(np.Spec.Template.Labels[k]); len(errs) > 0 {
			out = append(out, fmt.Sprintf("label %s value %q is invalid: %s", k, np.Spec.Template.Labels[k], strings.Join(errs, ", ")))
		}
	}
	return out
}

// admitPools drops the pools the launch gate holds from a solve, with a warning event on each.
func (p *Provisioner) admitPools(pools []solver.NodePoolInput) []solver.NodePoolInput {
	kept, held := p.launchGate.admit(pools)
	for _, h := range held {
		p.recorder.Eventf(h.pool, nil, corev1.EventTypeWarning, ReasonLaunchHeld, "Provision", "%s", h.message)
	}
	return kept
}

// ReasonLaunchHeld is the event reason on a NodePool the provisioner is not launching from.
const ReasonLaunchHeld = "LaunchHeld"
