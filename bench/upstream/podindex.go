package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// indexedPods is the fake client with one change: a Pod list selecting only spec.nodeName is
// served from an index, as upstream's informer cache serves it in a real cluster. The fake client
// answers every List by JSON-encoding every object of the kind and filtering afterwards, so each
// per-node pod list cost O(all pods): loading the 1,000-node round-robin cluster (one list per
// node) and upstream's candidate listing were quadratic in the cluster's size, and the 1,000-node
// run spent its whole time loading (over 200 CPU-s, 2 December). Other calls go to the fake client.
type indexedPods struct {
	client.Client
	byNode map[string][]*corev1.Pod
}

func newIndexedPods(c client.Client) *indexedPods {
	return &indexedPods{Client: c, byNode: map[string][]*corev1.Pod{}}
}

// add records a pod the fake client holds (the object as Create returned it).
func (c *indexedPods) add(p *corev1.Pod) {
	c.byNode[p.Spec.NodeName] = append(c.byNode[p.Spec.NodeName], p)
}

func (c *indexedPods) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*corev1.PodList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.FieldSelector == nil || lo.LabelSelector != nil || lo.Namespace != "" || len(lo.FieldSelector.Requirements()) != 1 {
		return c.Client.List(ctx, list, opts...)
	}
	node, found := lo.FieldSelector.RequiresExactMatch("spec.nodeName")
	if !found || node == "" {
		return c.Client.List(ctx, list, opts...)
	}
	pods := c.byNode[node]
	pl.Items = make([]corev1.Pod, 0, len(pods))
	for _, p := range pods {
		pl.Items = append(pl.Items, *p.DeepCopy())
	}
	return nil
}
