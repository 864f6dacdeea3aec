package provisioning

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
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
	nc := nodeClaimFor(np, plan, known)
	nc.Labels[v1.ProvisioningBatchLabelKey] = batch
	err := p.kube.Create(ctx, nc)
	p.launchGate.observe(np.Name, err)
	if err != nil {
		return fmt.Errorf("creating nodeclaim for nodepool %s: %w", np.Name, err)
	}
	p.cacheGate.createdClaim(nc.Name)
	nodeClaimsCreated.WithLabelValues(reasonProvisioned, np.Name, "false").Inc()
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

// nodeClaimFor builds the NodeClaim for a plan from its pool's template. Its labels, which the node
// gets, are the template labels and a value for each key only the pool's requirements define
// (requirementLabels).
func nodeClaimFor(np *v1.NodePool, plan *solver.NodeClaimPlan, known requirements.KnownKeys) *v1.NodeClaim {
	tmpl := np.Spec.Template
	labels := requirementLabels(plan.Requirements, known)
	labels[v1.NodePoolLabelKey] = np.Name
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	reqs := []v1.NodeSelectorRequirementWithMinValues{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Name}}}
	for _, r := range plan.Requirements {
		if r.Key == v1.NodePoolLabelKey || r.Key == v1.LabelHostname {
			continue
		}
		reqs = append(reqs, r)
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  withNodePoolHash(copyMap(tmpl.Annotations), np),
			Finalizers:   []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.GroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           reqs,
			Resources:              v1.ResourceRequirements{Requests: plan.Requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
		},
	}
}

// withNodePoolHash stamps the pool's template hash, against which drift is judged.
func withNodePoolHash(m map[string]string, np *v1.NodePool) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[v1.NodePoolHashAnnotationKey] = np.Hash()
	m[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	return m
}

// requirementLabels are the labels a NodeClaim takes from its requirements, as Karpenter's do: for
// each key no instance type defines (known) and outside the restricted kubernetes.io, k8s.io and
// karpenter.sh domains, the value requirements.Sample settles on, if the requirements demand the
// label (In, Exists, Gt, Lt, Gte, Lte). Without it a pod selecting the pool's own label is planned
// onto a node the kube-scheduler then finds without it.
func requirementLabels(reqs []v1.NodeSelectorRequirementWithMinValues, known requirements.KnownKeys) map[string]string {
	labels := map[string]string{}
	set, err := requirements.FromAPI(reqs)
	if err != nil {
		return labels // the solver wrote them; they parse
	}
	for _, kr := range set {
		if known[kr.Key] || restrictedLabel(kr.Key) {
			continue
		}
		if v, ok := kr.Sample(); ok {
			labels[kr.Key] = v
		}
	}
	return labels
}

// restrictedLabel reports whether key lies in a domain whose labels only the kubelet, the cloud
// provider or Karpenter itself set (Karpenter's restricted label domains and their exceptions).
func restrictedLabel(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, allowed := range []string{"node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io"} {
		if domain == allowed || strings.HasSuffix(domain, "."+allowed) {
			return false
		}
	}
	for _, restricted := range []string{"kubernetes.io", "k8s.io", "karpenter.sh"} {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return true
		}
	}
	return false
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
