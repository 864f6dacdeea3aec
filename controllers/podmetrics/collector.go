// Package podmetrics exports karpenter_pods_state, Karpenter's per-pod gauge, and the per-node sums of
// pod requests and limits (karpenter_nodes_total_pod_requests, …_total_pod_limits,
// …_total_daemon_requests, …_total_daemon_limits), computed from the informer cache when Prometheus
// scrapes rather than kept up to date on every pod event.
package podmetrics

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	ctrlmetrics "github.com/joist-dev/joist/controllers/metrics"
	nodemetrics "github.com/joist-dev/joist/controllers/metrics/node"
)

// stateLabels are karpenter_pods_state's label names, in the order labels returns their values.
var stateLabels = stateLabelsArray[:]

var stateDesc = prometheus.NewDesc("karpenter_pods_state",
	"Pod state is the current state of pods, labeled by pod name, namespace, owner, node, whether the pod is scheduled, "+
		"nodepool, zone, architecture, capacity type, instance type, phase, readiness, and whether the node is Joist-managed.",
	stateLabels, nil)

// Per-node sums over the pods bound to the node and not finished, labelled as karpenter_nodes_allocatable.
var (
	podRequestsDesc = nodeDesc("karpenter_nodes_total_pod_requests",
		"Sum of the requests of the pods bound to the node (DaemonSet pods included), by resource type and the node's well-known labels.")
	podLimitsDesc = nodeDesc("karpenter_nodes_total_pod_limits",
		"Sum of the limits of the pods bound to the node (DaemonSet pods included), by resource type and the node's well-known labels.")
	daemonRequestsDesc = nodeDesc("karpenter_nodes_total_daemon_requests",
		"Sum of the requests of the DaemonSet pods bound to the node, by resource type and the node's well-known labels.")
	daemonLimitsDesc = nodeDesc("karpenter_nodes_total_daemon_limits",
		"Sum of the limits of the DaemonSet pods bound to the node, by resource type and the node's well-known labels.")
)

func nodeDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, nodemetrics.LabelNames(ctrlmetrics.LabelResourceType), nil)
}

// Collector reads pods and nodes at scrape time: the informers' own objects when it has the
// informers, else from a cache-backed client (whose List copies every object into the list: ~1 KB
// per pod, 50 MB a scrape at 50,000 pods).
type Collector struct {
	kube      client.Reader
	informers ctrlcache.Informers
}

// Register exports karpenter_pods_state from informers' stores (nil: from kube, the manager's
// cache-backed client) in controller-runtime's registry, replacing the collector of a manager that
// ran before in this process.
func Register(kube client.Reader, informers ctrlcache.Informers) error {
	c := &Collector{kube: kube, informers: informers}
	crmetrics.Registry.Unregister(c) // matched by the descriptors Describe sends
	if err := crmetrics.Registry.Register(c); err != nil {
		return fmt.Errorf("registering karpenter_pods_state and the node pod sums: %w", err)
	}
	return nil
}

// Describe sends the metrics the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stateDesc, podRequestsDesc, podLimitsDesc, daemonRequestsDesc, daemonLimitsDesc} {
		ch <- d
	}
}

// Collect sends one sample per pod.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		log.FromContext(ctx).Error(err, "collecting karpenter_pods_state")
	}
}

func (c *Collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	byName, pods, err := c.read(ctx)
	if err != nil {
		return err
	}
	sums := map[string]*nodeSums{}
	var pairs statePairs
	var values [len(stateLabelsArray)]string
	for _, pod := range pods {
		ch <- pairs.sample(&pod.Name, labels(values[:0], pod, byName))
		if byName[pod.Spec.NodeName] == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if sums[pod.Spec.NodeName] == nil {
			sums[pod.Spec.NodeName] = &nodeSums{}
		}
		sums[pod.Spec.NodeName].add(pod)
	}
	names := nodemetrics.LabelNames(ctrlmetrics.LabelResourceType)
	podRequests, podLimits := ctrlmetrics.NewGauges(podRequestsDesc, names), ctrlmetrics.NewGauges(podLimitsDesc, names)
	daemonRequests, daemonLimits := ctrlmetrics.NewGauges(daemonRequestsDesc, names), ctrlmetrics.NewGauges(daemonLimitsDesc, names)
	nodeValues := make([]string, 0, len(names))
	for name, s := range sums {
		nodeValues = nodemetrics.LabelValues(nodeValues[:0], byName[name])
		for _, series := range [...]struct {
			gauges *ctrlmetrics.Gauges
			sum    corev1.ResourceList
		}{{podRequests, s.requests}, {podLimits, s.limits}, {daemonRequests, s.daemonRequests}, {daemonLimits, s.daemonLimits}} {
			for res, q := range series.sum {
				ch <- series.gauges.Gauge(q.AsApproximateFloat64(), append(nodeValues, nodemetrics.ResourceType(res))...)
			}
		}
	}
	return nil
}

// read returns the cached nodes by name and the cached pods, read only.
func (c *Collector) read(ctx context.Context) (map[string]*corev1.Node, []*corev1.Pod, error) {
	nodes, err := cachedobjects.Objects[corev1.Node](ctx, c.informers, c.kube, &corev1.NodeList{}, nil)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	pods, err := cachedobjects.Objects[corev1.Pod](ctx, c.informers, c.kube, &corev1.PodList{}, nil)
	if err != nil {
		return nil, nil, err
	}
	return byName, pods, nil
}

// nodeSums are one node's sums of pod requests and limits.
type nodeSums struct {
	requests, limits, daemonRequests, daemonLimits corev1.ResourceList
}

func (s *nodeSums) add(pod *corev1.Pod) {
	daemon := false
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		daemon = true
	}
	if plainPod(pod) {
		// The pod's requests and limits are its containers' sums (what PodRequests and PodLimits
		// return for such a pod), added straight into the node's: PodRequests and PodLimits build
		// four resource lists per pod, ~1.8 KB a pod and scrape (a third of the manager's heap at
		// the 50,000-pod peak of make bench-scale was one scrape's).
		for i := range pod.Spec.Containers {
			r := &pod.Spec.Containers[i].Resources
			s.requests = addTo(s.requests, r.Requests)
			s.limits = addTo(s.limits, r.Limits)
			if daemon {
				s.daemonRequests = addTo(s.daemonRequests, r.Requests)
				s.daemonLimits = addTo(s.daemonLimits, r.Limits)
			}
		}
		return
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lim := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	s.requests = addTo(s.requests, req)
	s.limits = addTo(s.limits, lim)
	if daemon {
		s.daemonRequests = addTo(s.daemonRequests, req)
		s.daemonLimits = addTo(s.daemonLimits, lim)
	}
}

// plainPod reports whether the pod's requests and limits are its containers' sums: no init
// containers (counted by their maximum), overhead or pod-level resources.
func plainPod(pod *corev1.Pod) bool {
	return len(pod.Spec.InitContainers) == 0 && pod.Spec.Overhead == nil && pod.Spec.Resources == nil
}

func addTo(sum, rl corev1.ResourceList) corev1.ResourceList {
	if sum == nil {
		sum = corev1.ResourceList{}
	}
	for name, q := range rl {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	return sum
}

// labels appends the pod's label values in stateDesc's order to out.
func labels(out []string, pod *corev1.Pod, nodes map[string]*corev1.Node) []string {
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
	return append(out,
		pod.Name, pod.Namespace, owner, pod.Spec.NodeName, strconv.FormatBool(pod.Spec.NodeName != ""),
		nodeLabels[v1.NodePoolLabelKey], nodeLabels[v1.LabelTopologyZone], nodeLabels[corev1.LabelArchStable],
		nodeLabels[v1.CapacityTypeLabelKey], nodeLabels[v1.LabelInstanceType], string(pod.Status.Phase),
		strconv.FormatBool(ready), strconv.FormatBool(nodeLabels[v1.NodePoolLabelKey] != ""),
	)
}
