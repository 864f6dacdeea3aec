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
func (c *Controller) driftReason(ctx context.Context, m *member) (string, error) {
	if !m.claim.IsTrue(v1.ConditionTypeLaunched) {
		return "", nil
	}
	if templateDrifted(m) {
		return v1.DriftReasonNodePoolDrifted, nil
	}
	reqs, err := requirements.ForNodePool(m.pool)
	if err != nil {
		return "", fmt.Errorf("reading requirements of nodepool %s: %w", m.pool.Name, err)
	}
	for _, kr := range reqs {
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

// templateDrifted compares the template hash stamped on the claim with the pool's, as Karpenter's
// static drift check does: only a claim carrying both the hash and the current hash version is
// judged. The pool's hash is computed, not read from its annotation (which the nodepool controller
// stamps with the same value), so a template edit is seen without waiting for the stamp.
func templateDrifted(m *member) bool {
	hash, ok := m.claim.Annotations[v1.NodePoolHashAnnotationKey]
	return ok && m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion && hash != m.pool.Hash()
}

// needsRestamp: a claim without the current hash version gets the pool's hash stamped instead of
// being judged, as Karpenter does when the hash version changes.
func needsRestamp(m *member) bool {
	return m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion
}
