package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/benchworkload"
)

// sizes are the five Deployments (1,000 pods in all), shared with the planner-only replay of the
// scale-down (test/benchworkload).
var sizes = benchworkload.Sizes

func runOnce(ctx context.Context, joist string) (result, error) {
	if preprovisioned {
		return runPreprovisioned(ctx)
	}
	var r result
	e, trace, err := benchEnv("joist")
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
	mgr, err := startBenchManager(e, joist)
	if err != nil {
		return r, err
	}
	defer mgr.Kill()

	np := nodePool()
	if err := kube.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}); err != nil {
		return r, err
	}
	if err := kube.Create(ctx, np.DeepCopy()); err != nil {
		return r, err
	}
	if err := waitFor(ctx, func() (bool, error) {
		got := &v1.NodePool{}
		err := kube.Get(ctx, client.ObjectKey{Name: np.Name}, got)
		return err == nil && got.IsTrue(v1.ConditionTypeReady), client.IgnoreNotFound(err)
	}); err != nil {
		return r, fmt.Errorf("waiting for the nodepool to be ready: %w", err)
	}
	deploys := deployments()
	plan := solver.Solve(solver.Input{Pods: expand(deploys), NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}}})
	r.planNodes, r.planCost = len(plan.NewNodeClaims), plan.CostPerHour

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
	claims := &v1.NodeClaimList{}
	if err := waitFor(ctx, func() (bool, error) {
		err := kube.List(ctx, claims)
		return err == nil && len(claims.Items) > 0, err
	}); err != nil {
		return r, fmt.Errorf("waiting for the first nodeclaim: %w", err)
	}
	r.firstClaim = tl.since()
	if err := tl.wait(ctx); err != nil {
		return r, fmt.Errorf("waiting for 1000 pods running: %w", err)
	}
	r.allBound, r.allRunning, r.timeline, r.phases = tl.allBound, tl.allRunning, tl.String(), tl.phases()
	trace.finish(tl)
	if keepLogs != "" {
		if raw, err := os.ReadFile(mgr.LogPath()); err == nil {
			path := filepath.Join(keepLogs, fmt.Sprintf("run-%s.log", time.Now().UTC().Format("20060102T150405")))
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				return r, fmt.Errorf("keeping the manager log: %w", err)
			}
			r.timeline += "\n       manager log kept as " + path
		}
	}
	if r.phases.batchClosed, r.phases.planned, err = batchTimes(mgr.LogPath(), tl.start); err != nil {
		return r, fmt.Errorf("reading the batch's times from the manager log: %w", err)
	}
	if requestStats {
		counts, err := requestCounts(ctx, e.Config)
		if err != nil {
			return r, err
		}
		r.timeline += "\n       apiserver requests: " + counts
	}
	if err := kube.List(ctx, claims); err != nil {
		return r, err
	}
	if r.empty, err = emptyNodes(ctx, kube); err != nil {
		return r, err
	}
	its := catalog.Default()
	for _, nc := range claims.Items {
		r.nodes++
		p, _ := catalog.OfferingPrice(its, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
		r.cost += p
	}
	r.peakRSSMiB, r.cpuSeconds, err = mgr.Stats()
	return r, err
}

// emptyNodes counts the nodes no pod is bound to.
func emptyNodes(ctx context.Context, kube client.Client) (int, error) {
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := kube.List(ctx, &nodes); err != nil {
		return 0, err
	}
	if err := kube.List(ctx, &pods); err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName] = true
	}
	empty := 0
	for _, n := range nodes.Items {
		if !used[n.Name] {
			empty++
		}
	}
	return empty, nil
}

func waitFor(ctx context.Context, cond func() (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) { return cond() })
}

func nodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "general"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: benchworkload.InstanceFamilies},
			},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}},
	}
}

// uniformSizes is the -uniform workload: one Deployment of 1,000 identical pods, so every planned
// node holds one interchangeable class and Joist writes no nominations (nomination.Interchangeable).
var uniformSizes = []benchworkload.Deployment{{Replicas: 1000, CPU: "250m", Memory: "512Mi"}}

// uniform selects uniformSizes over sizes.
var uniform bool

func deployments() []*appsv1.Deployment {
	var out []*appsv1.Deployment
	workloads := sizes
	if uniform {
		workloads = uniformSizes
	}
	for i, s := range workloads {
		labels := map[string]string{"app": fmt.Sprintf("bench-%d", i)}
		out = append(out, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: labels["app"], Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(s.Replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(s.CPU), corev1.ResourceMemory: resource.MustParse(s.Memory),
						}},
					}}},
				},
			},
		})
	}
	return out
}

// expand turns the Deployments into their pods with the expander the provisioner's tests and
// `joist simulate` share.
func expand(deploys []*appsv1.Deployment) []*corev1.Pod {
	pods, err := snapshot.ExpandAll(deploys)
	if err != nil {
		panic(err) // the benchmark's own fixed workloads
	}
	return pods
}
