package provisioning

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/claimtemplate"
	"github.com/joist-dev/joist/controllers/metrics"
	"github.com/joist-dev/joist/requirements"
	"github.com/joist-dev/joist/solver"
)

// Event reasons.
const (
	ReasonNominated        = "Nominated"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonLimitsExceeded   = "LimitsExceeded"
)

// Provision runs one batch: snapshot, solve, then nominate, launch and report.
func (p *Provisioner) Provision(ctx context.Context) error {
	if err := p.cacheGate.waitCaughtUp(ctx, p.kube); err != nil {
		return err
	}
	start := p.clock.Now()
	s, err := p.snapshot(ctx)
	if err != nil {
		return err
	}
	if len(s.Pending) == 0 {
		return nil
	}
	s.Input.NodePools = p.admitPools(s.Input.NodePools)
	if s.Input.Pods, err = p.enforceBindings(ctx, s.Input.Pods); err != nil {
		return err
	}
	snapshotTook := p.clock.Since(start)
	result := solver.Solve(s.Input)
	schedulingDuration.Observe(p.clock.Since(start).Seconds())
	opened, closedBy := p.batcher.LastBatch()
	log.FromContext(ctx).Info("solved batch", "pods", len(s.Pending), "batchOpenFor", start.Sub(opened).String(), "closedBy", closedBy, "newNodeClaims", len(result.NewNodeClaims),
		"unschedulable", len(result.Unschedulable), "costPerHour", result.CostPerHour, "duration", p.clock.Since(start).String(), "snapshot", snapshotTook.String())

	claimOf := map[string]string{}
	for _, n := range s.Input.Nodes {
		if n.NodeClaim != "" {
			claimOf[n.Name] = n.NodeClaim
		}
	}
	for _, pl := range result.ExistingPlacements {
		if claim, ok := claimOf[pl.Node]; ok {
			p.nominations.Plan(claim, pl.Pods)
		}
	}
	plans, blocked := s.Admit(result.NewNodeClaims)
	var catalogs [][]*catalog.InstanceType
	for _, pi := range s.Input.NodePools {
		catalogs = append(catalogs, pi.InstanceTypes)
	}
	known := requirements.Known(catalogs...) // as the solver reads them
	batch := fmt.Sprintf("%d", start.UnixNano())
	errs := make([]error, len(plans))
	var g errgroup.Group // not WithContext: one failed create must not cancel the others
	g.SetLimit(launchParallelism)
	for i := range plans {
		g.Go(func() error {
			errs[i] = p.launch(ctx, s.NodePools[plans[i].NodePool], &plans[i], batch, known)
			return nil
		})
	}
	_ = g.Wait()
	for _, b := range blocked {
		for _, pod := range b.Plan.Pods {
			p.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provision", "%s", b.Reason)
		}
	}
	for _, u := range result.Unschedulable {
		p.recorder.Eventf(u.Pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provision", "%s", u.Reason)
		if u.Cause == solver.CauseLimits {
			if np, ok := s.NodePools[u.NodePool]; ok {
				p.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonLimitsExceeded, "Provision", "%s", u.Reason)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating nodeclaims: %w", err)
	}
	return nil
}

// launchParallelism bounds the NodeClaim creates in flight: a batch's nodes should start together.
const launchParallelism = 16

// launch creates the NodeClaim a plan describes and records its pods' nominations in memory.
func (p *Provisioner) launch(ctx context.Context, np *v1.NodePool, plan *solver.NodeClaimPlan, batch string, known requirements.KnownKeys) error {
	if !p.launchGate.startCreate(np.Name) {
		return nil // the pool is backing off: its pods are planned again when the hold ends
	}
	nc := claimtemplate.NodeClaim(np, plan, known)
	nc.Labels[v1.ProvisioningBatchLabelKey] = batch
	err := p.kube.Create(ctx, nc)
	p.launchGate.observe(np.Name, err)
	if err != nil {
		return fmt.Errorf("creating nodeclaim for nodepool %s: %w", np.Name, err)
	}
	p.cacheGate.createdClaim(nc.Name)
	metrics.CountNodeClaimCreated(np.Name, metrics.ReasonProvisioned)
	log.FromContext(ctx).V(1).Info("created nodeclaim", "nodeclaim", nc.Name, "nodepool", np.Name,
		"instanceType", plan.InstanceType.Name, "zone", plan.Offering.Zone, "capacityType", plan.Offering.CapacityType,
		"pods", len(plan.Pods))
	p.nominations.Launched(nc.Name, plan.Pods)
	for _, pod := range plan.Pods {
		if p.nominatedEvents.TryAccept() {
			p.recorder.Eventf(pod, nc, corev1.EventTypeNormal, ReasonNominated, "Provision",
				"Pod should schedule on: nodeclaim/%s (%s)", nc.Name, plan.InstanceType.Name)
		}
	}
	return nil
}

// The NodeClaim's owner reference sets blockOwnerDeletion, which OwnerReferencesPermissionEnforcement
// (on by default in OpenShift) allows only to a creator that may update the owner's finalizers.
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/finalizers,verbs=update
