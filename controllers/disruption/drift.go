package disruption

import (
	"context"
	"fmt"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

// driftReason says why a launched node no longer matches its NodePool and NodeClass, or "":
//   - NodePoolDrifted: the template hash stamped on the claim differs from the pool's now (a claim
//     stamped by another hash version is re-stamped, not drifted: see restamp);
//   - RequirementsDrifted: a label of the node no longer satisfies the pool's requirements;
//   - the cloud provider's reason (KWOK: ImageDrifted when the NodeClass image changed).
//
// pools holds what the checks read of each pool, worked out once per pass.
func (c *Controller) driftReason(ctx context.Context, m *member, pools poolFacts) (string, error) {
	if !m.claim.IsTrue(v1.ConditionTypeLaunched) {
		return "", nil
	}
	pool := pools.of(m.pool)
	if templateDriftedFrom(m, pool.hash) {
		return v1.DriftReasonNodePoolDrifted, nil
	}
	if pool.err != nil {
		return "", fmt.Errorf("reading requirements of nodepool %s: %w", m.pool.Name, pool.err)
	}
	for _, kr := range pool.reqs {
		if kr.Key == v1.NodePoolLabelKey {
			continue
		}
		value, ok := m.node.Labels[kr.Key]
		if !ok {
			value, ok = m.claim.Labels[kr.Key]
		}
		if ok && !kr.Has(value) {
			return v1.DriftReasonRequirementsDrifted, nil
		}
	}
	reason, err := c.cloud.IsDrifted(ctx, m.claim)
	if err != nil {
		return "", fmt.Errorf("checking drift of nodeclaim %s: %w", m.claim.Name, err)
	}
	return string(reason), nil
}

// templateDriftedFrom compares the template hash stamped on the claim with the pool's (poolHash),
// as Karpenter's static drift check does: only a claim carrying both the hash and the current hash
// version is judged. The pool's hash is computed (poolFacts), not read from its annotation (which
// the nodepool controller stamps with the same value), so a template edit is seen without waiting
// for the stamp.
func templateDriftedFrom(m *member, poolHash string) bool {
	hash, ok := m.claim.Annotations[v1.NodePoolHashAnnotationKey]
	return ok && m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion && hash != poolHash
}

// poolFacts are what the drift checks read of each pool (its template hash and requirements), by
// pool, each worked out once per pass instead of once per member: they were ~3.5 and ~8 KB
// allocated per member and pass (hashstructure's walk, requirements.ForNodePool). The pools are the
// pass's read (the cache's own objects, not modified), so a pool's facts do not change within it.
type poolFacts map[*v1.NodePool]*poolFact

type poolFact struct {
	hash string
	reqs requirements.Set
	err  error
}

func (pf poolFacts) of(p *v1.NodePool) *poolFact {
	if f, ok := pf[p]; ok {
		return f
	}
	f := &poolFact{hash: p.Hash()}
	f.reqs, f.err = requirements.ForNodePool(p)
	pf[p] = f
	return f
}

// needsRestamp: a claim without the current hash version gets the pool's hash stamped instead of
// being judged, as Karpenter does when the hash version changes.
func needsRestamp(m *member) bool {
	return m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion
}
