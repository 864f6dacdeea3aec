package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
)

// updateStatus writes what the loop observed about each claim, one status patch per claim at most:
// Drifted (with the reason), Consolidatable, lastPodEventTime. Claims stamped by another hash
// version get the pool's current hash. Blocked events say once why a node is protected.
func (c *Controller) updateStatus(ctx context.Context, cl *cluster, members []*member, now time.Time) error {
	var errs []error
	var patches []statusPatch
	for _, m := range members {
		if needsRestamp(m) {
			errs = append(errs, c.restamp(ctx, m))
		}
		reason, err := c.driftReason(ctx, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.driftReason = reason
		// m.claim is the informer cache's own object (refresh): the observed status goes on a copy,
		// patched against the cached claim.
		observed := m.claim.DeepCopy()
		changed := false
		if reason != "" {
			changed = observed.SetCondition(v1.ConditionTypeDrifted, metav1.ConditionTrue, reason, driftMessage(reason)) || changed
		} else {
			changed = observed.ClearCondition(v1.ConditionTypeDrifted) || changed
		}
		if m.consolidatable {
			changed = observed.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, v1.ConsolidatableReason,
				fmt.Sprintf("no pod landed or left for consolidateAfter (%s)", m.pool.Spec.Disruption.ConsolidateAfter.String())) || changed
		} else {
			changed = observed.ClearCondition(v1.ConditionTypeConsolidatable) || changed
		}
		// Conditions of an older API (Empty) are no longer set by anyone.
		changed = observed.ClearCondition(v1.ConditionTypeEmpty) || changed
		if t := metav1.NewTime(m.lastPodEvent.Truncate(time.Second)); !t.Equal(&observed.Status.LastPodEventTime) && (changed || c.lastPodEventDue(m, now)) {
			observed.Status.LastPodEventTime = t
			changed = true
		}
		if changed {
			patches = append(patches, statusPatch{claim: observed, stored: m.claim})
		}
		if m.blocked != "" && !strings.HasPrefix(m.blocked, "the node is") {
			c.blockedEvent(m, m.blocked)
		} else if m.blocked == "" {
			c.blockedEvent(m, "")
		}
	}
	return errors.Join(append(errs, c.patchStatuses(ctx, patches))...)
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

// statusPatch is one claim's status as observed (a copy, which the patch's answer is decoded into),
// and as stored before (the cached claim, only read).
type statusPatch struct{ claim, stored *v1.NodeClaim }

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
			if err := c.kube.Status().Patch(ctx, p.claim, client.MergeFrom(p.stored)); client.IgnoreNotFound(err) != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("patching nodeclaim %s status: %w", p.claim.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
func (c *Controller) restamp(ctx context.Context, m *member) error {
	stamped := m.claim.DeepCopy()
	stampHashVersion(stamped, m.pool.Hash())
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
