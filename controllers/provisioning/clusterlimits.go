package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/solver"
)

// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch

// clusterHeadroom is what the Guardrails' clusterLimits leave for new nodes, given the capacity of
// every live NodeClaim (launched capacity, or requests before launch).
func (p *Provisioner) clusterHeadroom(ctx context.Context, claims []v1.NodeClaim) (policy.Headroom, error) {
	guardrails := &policyv1alpha1.GuardrailList{}
	if err := p.kube.List(ctx, guardrails); err != nil {
		if meta.IsNoMatchError(err) {
			return policy.Headroom{}, nil // Guardrail CRD not installed: no ceiling
		}
		return policy.Headroom{}, fmt.Errorf("listing guardrails: %w", err)
	}
	inUse := corev1.ResourceList{}
	var nodes int64
	for i := range claims {
		nc := &claims[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		nodes++
		for name, q := range claimCapacity(nc) {
			sum := inUse[name]
			sum.Add(q)
			inUse[name] = sum
		}
	}
	return policy.ClusterLimitHeadroom(guardrails.Items, inUse, nodes), nil
}

// claimCapacity is what a NodeClaim counts against limits: its launched capacity, or before launch
// the requests it was sized for.
func claimCapacity(nc *v1.NodeClaim) corev1.ResourceList {
	if len(nc.Status.Capacity) > 0 {
		return nc.Status.Capacity
	}
	return nc.Spec.Resources.Requests
}

// blockedPlan is a planned node the cluster-wide limits do not allow.
type blockedPlan struct {
	plan   solver.NodeClaimPlan
	reason string
}

// admitPlans keeps plans, in the solver's order, while they fit the cluster-wide headroom; a batch
// shares one budget.
func admitPlans(h policy.Headroom, plans []solver.NodeClaimPlan) (admitted []solver.NodeClaimPlan, blocked []blockedPlan) {
	if !h.Limited() {
		return plans, nil
	}
	for _, plan := range plans {
		if ok, reason := h.Fits(plan.InstanceType.Capacity); !ok {
			blocked = append(blocked, blockedPlan{plan: plan, reason: reason})
			continue
		}
		h.Subtract(plan.InstanceType.Capacity)
		admitted = append(admitted, plan)
	}
	return admitted, blocked
}
