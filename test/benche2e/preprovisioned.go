package main

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// preprovisioned is the floor mode: the solver's planned nodes exist before the pods are created and
// no manager runs, so the time to all Running is what the stack (apiserver, controllers, scheduler,
// KWOK) needs by itself; Joist's time divided by it is the autoscaling overhead.
var preprovisioned bool

// runPreprovisioned is runOnce without autoscaling: the planned nodes are registered up front and
// each pod is pinned to the node the plan gives it. The kube-scheduler scores pods one at a time and
// cannot reproduce a bin-packing plan on exact capacity (unpinned, its spreading strands pods), so
// each Deployment is split by planned node, each part with a kubernetes.io/hostname nodeSelector: the
// same 1,000 pods with the same requests, on the same nodes, placed by the same default scheduler.
func runPreprovisioned(ctx context.Context) (result, error) {
	var r result
	e, trace, err := benchEnv("floor")
	if err != nil {
		return r, err
	}
	defer func() { _ = e.Stop() }()
	defer trace.cleanup()
	e.Config.QPS, e.Config.Burst = 1000, 2000
	kube, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return r, err
	}
	deploys := deployments()
	plan := solver.Solve(solver.Input{Pods: expand(deploys), NodePools: []solver.NodePoolInput{{NodePool: nodePool(), InstanceTypes: catalog.Default()}}})
	if len(plan.Unschedulable) > 0 {
		return r, fmt.Errorf("the plan leaves %d pods unschedulable: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
	}
	r.planNodes, r.planCost = len(plan.NewNodeClaims), plan.CostPerHour
	var nodeNames []string
	for i, nc := range plan.NewNodeClaims {
		name := fmt.Sprintf("planned-%d", i)
		nodeNames = append(nodeNames, name)
		if err := kube.Create(ctx, plannedNode(name, &nc)); err != nil {
			return r, fmt.Errorf("creating planned node %d: %w", i, err)
		}
	}
	if err := waitFor(ctx, func() (bool, error) {
		var nodes corev1.NodeList
		if err := kube.List(ctx, &nodes); err != nil {
			return false, err
		}
		schedulable := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0 {
					schedulable++
				}
			}
		}
		return schedulable == len(plan.NewNodeClaims), nil
	}); err != nil {
		return r, fmt.Errorf("waiting for the planned nodes to be Ready and untainted: %w", err)
	}
	pinned, err := pinToPlan(deploys, plan, nodeNames)
	if err != nil {
		return r, err
	}
	tl, err := watchTimeline(ctx, e.Config, 1000)
	if err != nil {
		return r, err
	}
	tl.begin()
	for _, d := range pinned {
		if err := kube.Create(ctx, d); err != nil {
			return r, err
		}
	}
	if err := tl.wait(ctx); err != nil {
		return r, fmt.Errorf("waiting for 1000 pods running: %w", err)
	}
	r.allBound, r.allRunning, r.phases = tl.allBound, tl.allRunning, tl.phases()
	trace.finish(tl)
	tl.mu.Lock()
	r.timeline = fmt.Sprintf("all pods created %.1fs, first bound %.1fs, %s, %d marked Unschedulable on the way",
		tl.allCreated.Seconds(), tl.firstBound.Seconds(), tl.boundProfile(), len(tl.unschedulable))
	tl.mu.Unlock()
	r.nodes, r.cost = r.planNodes, r.planCost
	return r, nil
}

// pinToPlan splits each Deployment into one per planned node that holds its pods, with as many
// replicas as the plan puts there and a nodeSelector on that node's hostname. Splitting can only
// make the ReplicaSet controller create pods sooner (more ReplicaSets sync in parallel), so the
// floor errs low and Joist's ratio to it high.
func pinToPlan(deploys []*appsv1.Deployment, plan solver.Result, nodeNames []string) ([]*appsv1.Deployment, error) {
	byApp := map[string]*appsv1.Deployment{}
	for _, d := range deploys {
		byApp[d.Spec.Template.Labels["app"]] = d
	}
	var out []*appsv1.Deployment
	total := 0
	for i, nc := range plan.NewNodeClaims {
		count := map[string]int32{}
		for _, p := range nc.Pods {
			count[p.Labels["app"]]++
		}
		apps := make([]string, 0, len(count))
		for app := range count {
			apps = append(apps, app)
		}
		sort.Strings(apps)
		for _, app := range apps {
			d, ok := byApp[app]
			if !ok {
				return nil, fmt.Errorf("planned node %d holds pods of unknown app %q", i, app)
			}
			out = append(out, pinned(d, nodeNames[i], count[app]))
			total += int(count[app])
		}
	}
	if total != 1000 {
		return nil, fmt.Errorf("the plan places %d pods, want 1000", total)
	}
	return out, nil
}

// pinned is d's part on node: replicas of d's pod template with a hostname nodeSelector.
func pinned(d *appsv1.Deployment, node string, replicas int32) *appsv1.Deployment {
	p := d.DeepCopy()
	p.Name = d.Name + "-" + node
	labels := map[string]string{"app": d.Spec.Template.Labels["app"], "planned-node": node}
	p.Spec.Replicas = ptr.To(replicas)
	p.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	p.Spec.Template.Labels = labels
	p.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return p
}

// plannedNode is the KWOK Node a plan would have registered as.
func plannedNode(name string, nc *solver.NodeClaimPlan) *corev1.Node {
	labels := map[string]string{}
	for k, v := range nc.InstanceType.Labels {
		labels[k] = v
	}
	labels[v1.LabelInstanceType] = nc.InstanceType.Name
	labels[v1.LabelTopologyZone] = nc.Offering.Zone
	labels[v1.CapacityTypeLabelKey] = nc.Offering.CapacityType
	labels[v1.LabelHostname] = name
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{env.KWOKNodeAnnotation: env.KWOKNodeAnnotationValue}},
		Status: corev1.NodeStatus{Capacity: nc.InstanceType.Capacity.DeepCopy(), Allocatable: nc.InstanceType.Allocatable()},
	}
}
