package disruption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	c.writes.forgetOldStatuses()
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
		if (condsChanged || eventChanged) && !c.status.busy(m.claim.Name) && !c.writes.statusPending(m.claim) {
			p := statusPatch{name: m.claim.Name, from: m.claim}
			if condsChanged {
				p.conditions = slices.Clone(scratch.Status.Conditions)
				p.keepAnswer = driftChanged(m.claim, &scratch)
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
	// The patches the rest of the pass reads back (Drifted: decide) are written now; the others
	// (Consolidatable, lastPodEventTime) go to the status writer, off the pass.
	var inPass, later []statusPatch
	for _, p := range patches {
		if p.keepAnswer {
			inPass = append(inPass, p)
		} else {
			later = append(later, p)
		}
	}
	c.status.enqueue(later)
	return errors.Join(append(errs, c.patchStatuses(ctx, inPass))...)
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
	// keepAnswer: the patch changes what the rest of the pass reads (Drifted: decide), so it is
	// written within the pass and its answer is laid over the cache until the cache shows it
	// (ownWrites). Any other patch goes to the status writer (statuswriter.go).
	keepAnswer bool
	// from is the cached claim the patch was worked out from (only read): an answer that differs
	// from it only in what the patch writes does not change what the idle memo keys on (aliasStatus).
	from *v1.NodeClaim
}

// driftChanged reports whether observed's Drifted condition reads differently from stored's (decide
// reads its status and reason).
func driftChanged(stored, observed *v1.NodeClaim) bool {
	a, b := stored.GetCondition(v1.ConditionTypeDrifted), observed.GetCondition(v1.ConditionTypeDrifted)
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return a.Status != b.Status || a.Reason != b.Reason
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

// patchStatus sends one claim's status patch. The apiserver's answer is decoded into a claim of its
// own (never into one sharing maps with the cache: decoding fills the maps it finds). Only an answer
// the rest of the pass reads (keepAnswer) is laid over the cache, as it is, without the copy the
// recording client makes of what it is handed; of any other only the resource version written is
// remembered (keepStatus). In the settle window after a thousand nodes launched, a thousand
// answers (~2.5 KB each) were held until the cache showed them, and nothing read them: the pass
// recomputes Consolidatable and lastPodEventTime from what it observes.
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
	if p.keepAnswer {
		c.writes.keep(answer)
	} else {
		c.writes.keepStatus(answer.Name, answer.ResourceVersion)
		if p.from != nil && ownStatusOnly(p.from, answer) {
			c.writes.aliasStatus(answer.Name, p.from.ResourceVersion, answer.ResourceVersion)
		}
	}
	return nil
}

// statusWrite is a status patch whose answer was not kept: the resource version it wrote, and when.
type statusWrite struct {
	resourceVersion string
	at              time.Time
}

// keepStatus remembers that this loop patched the claim's status to resourceVersion, until the cache
// shows it (statusPending). It is the status writer's, off the pass, and what it wrote no decision
// reads: it does not count as a write that makes the pass read again (writes).
func (w *ownWrites) keepStatus(name, resourceVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statuses[name] = statusWrite{resourceVersion: resourceVersion, at: time.Now()}
}

// statusPending reports whether a status patch this loop sent to the claim is not in the cache yet
// (the cache lags behind it). The claim's status is then not written again from the stale copy:
// the next pass that reads the written version decides afresh. It forgets a write the cache shows.
func (w *ownWrites) statusPending(cached *v1.NodeClaim) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	sw, ok := w.statuses[cached.Name]
	if !ok {
		return false
	}
	if newer(sw.resourceVersion, cached.ResourceVersion) && time.Since(sw.at) <= ownWritesTTL {
		return true
	}
	delete(w.statuses, cached.Name)
	return false
}

// forgetOldStatuses drops the status writes older than ownWritesTTL (their claims went meanwhile,
// or the cache never showed them).
func (w *ownWrites) forgetOldStatuses() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, sw := range w.statuses {
		if time.Since(sw.at) > ownWritesTTL {
			delete(w.statuses, name)
		}
	}
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
