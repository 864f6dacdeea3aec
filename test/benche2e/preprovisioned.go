package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// runPreprovisioned is runOnce without autoscaling: the planned nodes are registered up front.
func runPreprovisioned(ctx context.Context) (result, error) {
	var r result
	e, err := env.Start(env.Options{Scheduler: true, ControllerManager: true, KWOK: true})
	if err != nil {
		return r, err
	}
	defer func() { _ = e.Stop() }()
	e.Config.QPS, e.Config.Burst = 1000, 2000
	kube, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return r, err
	}
	deploys := deployments()
	plan := solver.Solve(solver.Input{Pods: expand(deploys), NodePools: []solver.NodePoolInput{{NodePool: nodePool(), InstanceTypes: catalog.Default()}}})
	r.planNodes, r.planCost = len(plan.NewNodeClaims), plan.CostPerHour
	for i, nc := range plan.NewNodeClaims {
		if err := kube.Create(ctx, plannedNode(fmt.Sprintf("planned-%d", i), &nc)); err != nil {
			return r, fmt.Errorf("creating planned node %d: %w", i, err)
		}
	}
	if err := waitFor(ctx, func() (bool, error) {
		var nodes corev1.NodeList
		if err := kube.List(ctx, &nodes); err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(plan.NewNodeClaims), nil
	}); err != nil {
		return r, fmt.Errorf("waiting for the planned nodes to be Ready: %w", err)
	}
	tl, err := watchTimeline(ctx, e.Config, 1000)
	if err != nil {
		return r, err
	}
	tl.begin()
	for _, d := range deploys {
		if err := kube.Create(ctx, d); err != nil {
			return r, err
		}
	}
	if err := tl.wait(ctx); err != nil {
		return r, fmt.Errorf("waiting for 1000 pods running: %w", err)
	}
	r.allBound, r.allRunning, r.timeline = tl.allBound, tl.allRunning, tl.String()
	r.nodes, r.cost = r.planNodes, r.planCost
	return r, nil
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
