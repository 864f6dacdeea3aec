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
	if m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion &&
		m.claim.Annotations[v1.NodePoolHashAnnotationKey] != m.pool.Hash() {
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

// needsRestamp: a claim without the current hash version gets the pool's hash stamped instead of
// being judged, as Karpenter does when the hash version changes.
func needsRestamp(m *member) bool {
	return m.claim.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion
}
