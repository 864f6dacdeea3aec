package disruption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
)

// updateStatus writes what the loop observed about each claim, one status patch per claim at most:
// Drifted (with the reason), Consolidatable, lastPodEventTime. Claims stamped by another hash
// version get the pool's current hash. Blocked events say once why a node is protected.
//
// m.claim is the informer cache's own object (refresh), only read: the observed conditions are
// worked out on a scratch copy of its conditions alone, reused from claim to claim, and a claim whose
// status does not change costs no allocation. A claim that changes gets a merge patch of the fields
// written (conditions, lastPodEventTime), built from those fields rather than by diffing two copies
// of the whole claim.
func (c *Controller) updateStatus(ctx context.Context, cl *cluster, members []*member, now time.Time) error {
	var errs []error
	var patches []statusPatch
	var scratch v1.NodeClaim
	consolidatableMsgs := map[string]string{} // by pool
	pools := poolFacts{}
	for _, m := range members {
		if needsRestamp(m) {
			errs = append(errs, c.restamp(ctx, m, pools.of(m.pool).hash))
		}
		reason, err := c.driftReason(ctx, m, pools)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.driftReason = reason
		msg, ok := consolidatableMsgs[m.pool.Name]
		if !ok && m.consolidatable {
			msg = fmt.Sprintf("no pod landed or left for consolidateAfter (%s)", m.pool.Spec.Disruption.ConsolidateAfter.String())
			consolidatableMsgs[m.pool.Name] = msg
		}
		condsChanged := observeConditions(&scratch, m.claim, reason, m.consolidatable, msg)
		lastPodEvent := metav1.NewTime(m.lastPodEvent.Truncate(time.Second))
		eventChanged := !lastPodEvent.Equal(&m.claim.Status.LastPodEventTime) && (condsChanged || c.lastPodEventDue(m, now))
		if condsChanged || eventChanged {
			p := statusPatch{name: m.claim.Name}
			if condsChanged {
				p.conditions = slices.Clone(scratch.Status.Conditions)
			}
			if eventChanged {
				p.lastPodEventTime = &lastPodEvent
			}
			patches = append(patches, p)
		}
		if m.blocked != "" && !strings.HasPrefix(m.blocked, "the node is") {
			c.blockedEvent(m, m.blocked)
		} else if m.blocked == "" {
			c.blockedEvent(m, "")
		}
	}
	return errors.Join(append(errs, c.patchStatuses(ctx, patches))...)
}

// observeConditions puts into scratch.Status.Conditions the stored claim's conditions as this loop
// observes them — Drifted with reason (none when ""), Consolidatable, no Empty (an older API's,
// no longer set by anyone) and the Ready roll-up SetCondition keeps — and reports whether they
// differ from the stored ones. stored is not modified; scratch's conditions are a copy, whose
// backing array is reused from call to call.
func observeConditions(scratch, stored *v1.NodeClaim, reason string, consolidatable bool, consolidatableMsg string) bool {
	scratch.Generation = stored.Generation
	scratch.Status.Conditions = append(scratch.Status.Conditions[:0], stored.Status.Conditions...)
	changed := false
	if reason != "" {
		changed = scratch.SetCondition(v1.ConditionTypeDrifted, metav1.ConditionTrue, reason, driftMessage(reason)) || changed
	} else {
		changed = clearCondition(&scratch.Status.Conditions, v1.ConditionTypeDrifted) || changed
	}
	if consolidatable {
		changed = scratch.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, v1.ConsolidatableReason, consolidatableMsg) || changed
	} else {
		changed = clearCondition(&scratch.Status.Conditions, v1.ConditionTypeConsolidatable) || changed
	}
	return clearCondition(&scratch.Status.Conditions, v1.ConditionTypeEmpty) || changed
}

// clearCondition removes condition t in place (NodeClaim.ClearCondition allocates a new slice even
// when t is absent); it reports whether it was present.
func clearCondition(conds *[]metav1.Condition, t string) bool {
	n := len(*conds)
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool { return c.Type == t })
	return len(*conds) != n
}

// lastPodEventDedupe is how long a change of lastPodEventTime alone may wait for a patch that writes
// the claim's conditions: upstream's podevents controller writes it at most once per 10 s
// (dedupeTimeout) for the same reason — pods land and leave in bursts.
const lastPodEventDedupe = 10 * time.Second

// lastPodEventDue reports whether the claim's observed last pod event must be written on its own:
// it counts (it is after the settle that follows the node's initialization, so a new leader
// reading it would otherwise count consolidateAfter from an earlier time) and it is
// lastPodEventDedupe old. Otherwise it goes out with the next condition change: in the settle window
// after nodes launch, the patch that sets Consolidatable carries it, one status patch per claim
// instead of two.
func (c *Controller) lastPodEventDue(m *member, now time.Time) bool {
	if m.lastPodEvent.IsZero() || now.Sub(m.lastPodEvent) < lastPodEventDedupe {
		return false
	}
	return disruptionpolicy.SettledPodEvent(m.policyNode()).Equal(m.lastPodEvent)
}

// statusPatchParallelism bounds the status patches one pass has in flight. Written one after the
// other they made a pass after a thousand nodes launched last about a minute (one round trip each).
const statusPatchParallelism = 16

// statusPatch is what one claim's status patch writes: its observed conditions (all of them — a
// merge patch replaces a list whole — or nil when they did not change) and its lastPodEventTime
// (nil: unchanged).
type statusPatch struct {
	name             string
	conditions       []metav1.Condition
	lastPodEventTime *metav1.Time
}

// data is the JSON merge patch: {"status":{"conditions":[…],"lastPodEventTime":…}} with the fields
// that change, what client.MergeFrom computed from a copy of the whole claim before.
func (p statusPatch) data() ([]byte, error) {
	status := map[string]any{}
	if p.conditions != nil {
		status["conditions"] = p.conditions
	}
	if p.lastPodEventTime != nil {
		status["lastPodEventTime"] = p.lastPodEventTime
	}
	return json.Marshal(map[string]any{"status": status})
}

// patchStatuses writes the claims' statuses, up to statusPatchParallelism at once; every patch is
// tried, and the errors are returned together.
func (c *Controller) patchStatuses(ctx context.Context, patches []statusPatch) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	slots := make(chan struct{}, statusPatchParallelism)
	for _, p := range patches {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := c.patchStatus(ctx, p); client.IgnoreNotFound(err) != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("patching nodeclaim %s status: %w", p.name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// patchStatus sends one claim's status patch. The apiserver's answer is decoded into a claim of its
// own (never into one sharing maps with the cache: decoding fills the maps it finds) and recorded as
// this loop's write as it is, without the copy the recording client makes of what it is handed.
func (c *Controller) patchStatus(ctx context.Context, p statusPatch) error {
	data, err := p.data()
	if err != nil {
		return err
	}
	kube := c.kube
	if r, ok := kube.(recordingClient); ok {
		kube = r.Client
	}
	answer := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
	if err := kube.Status().Patch(ctx, answer, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	c.writes.keep(answer)
	return nil
}

// keep records a claim this loop wrote, as wrote does, but the claim itself rather than a copy: the
// caller hands it over and does not touch it again. Its managed fields are dropped (the cache's
// claims have none and nothing here reads them).
func (w *ownWrites) keep(nc *v1.NodeClaim) {
	w.writes.Add(1)
	nc.ManagedFields = nil
	w.mu.Lock()
	defer w.mu.Unlock()
	created := false
	if prev, ok := w.written[nc.Name]; ok && prev.created {
		created = true // patched before the cache listed it
	}
	w.written[nc.Name] = writtenClaim{claim: nc, at: time.Now(), created: created}
}

func driftMessage(reason string) string {
	switch reason {
	case v1.DriftReasonNodePoolDrifted:
		return "the NodePool template changed since the node was launched"
	case v1.DriftReasonRequirementsDrifted:
		return "the node's labels no longer satisfy the NodePool's requirements"
	}
	return "the cloud provider reports the instance no longer matches its NodeClass: " + reason
}

// restamp writes the current hash version onto the claim (see stampHashVersion).
// It patches a copy: m.claim is the cache's own object; the member goes on with the stamped copy.
func (c *Controller) restamp(ctx context.Context, m *member, poolHash string) error {
	stamped := m.claim.DeepCopy()
	stampHashVersion(stamped, poolHash)
	if err := c.kube.Patch(ctx, stamped, client.MergeFrom(m.claim)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("stamping nodepool hash on nodeclaim %s: %w", m.claim.Name, err)
	}
	m.claim = stamped
	return nil
}

// stampHashVersion moves a claim stamped by another hash version to the current one. As Karpenter, the
// pool's current hash is written only when the claim has no Drifted condition: across a hash-version
// change drift can no longer be recomputed, so a claim that was drifted keeps its old hash and stays so.
func stampHashVersion(claim *v1.NodeClaim, poolHash string) {
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	if claim.GetCondition(v1.ConditionTypeDrifted) == nil {
		claim.Annotations[v1.NodePoolHashAnnotationKey] = poolHash
	}
}
