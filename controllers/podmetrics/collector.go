// Package podmetrics exports karpenter_pods_state, Karpenter's per-pod gauge, computed from the
// informer cache when Prometheus scrapes rather than kept up to date on every pod event.
package podmetrics

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
)

var stateDesc = prometheus.NewDesc("karpenter_pods_state",
	"Pod state is the current state of pods, labeled by pod name, namespace, owner, node, whether the pod is scheduled, "+
		"nodepool, zone, architecture, capacity type, instance type, phase, readiness, and whether the node is Joist-managed.",
	[]string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}, nil)

// Collector reads pods and nodes from a cache-backed client at scrape time.
type Collector struct {
	kube client.Reader
}

// Register exports karpenter_pods_state from kube, the manager's cache-backed client, in
// controller-runtime's registry, replacing the collector of a manager that ran before in this process.
func Register(kube client.Reader) error {
	c := &Collector{kube: kube}
	crmetrics.Registry.Unregister(c) // matched by the descriptors Describe sends
	if err := crmetrics.Registry.Register(c); err != nil {
		return fmt.Errorf("registering karpenter_pods_state: %w", err)
	}
	return nil
}

// Describe sends the one metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- stateDesc }

// Collect sends one sample per pod.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		log.FromContext(ctx).Error(err, "collecting karpenter_pods_state")
	}
}

func (c *Collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	kube := c.kube
	var nodes corev1.NodeList
	if err := kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var pods corev1.PodList
	if err := kube.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, 1, labels(&pods.Items[i], byName)...)
	}
	return nil
}

// labels are the pod's label values in stateDesc's order.
func labels(pod *corev1.Pod, nodes map[string]*corev1.Node) []string {
	owner := ""
	if len(pod.OwnerReferences) > 0 {
		ref := pod.OwnerReferences[0]
		owner = fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", ref.APIVersion, pod.Namespace, strings.ToLower(ref.Kind), ref.Name)
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
	}
	var nodeLabels map[string]string
	if n := nodes[pod.Spec.NodeName]; n != nil {
		nodeLabels = n.Labels
	}
	return []string{
		pod.Name, pod.Namespace, owner, pod.Spec.NodeName, strconv.FormatBool(pod.Spec.NodeName != ""),
		nodeLabels[v1.NodePoolLabelKey], nodeLabels[v1.LabelTopologyZone], nodeLabels[corev1.LabelArchStable],
		nodeLabels[v1.CapacityTypeLabelKey], nodeLabels[v1.LabelInstanceType], string(pod.Status.Phase),
		strconv.FormatBool(ready), strconv.FormatBool(nodeLabels[v1.NodePoolLabelKey] != ""),
	}
}
