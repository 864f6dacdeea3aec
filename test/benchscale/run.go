package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// The node shape the plan fills: the catalog's cheapest 2-cpu type (c-2x-arm64-linux), whose
// allocatable the floor's pre-registered nodes copy.
const (
	planType     = "c-2x-arm64-linux"
	allocCPU     = 1930 // millicores
	allocMemory  = "3389Mi"
	allocPods    = 32
	podMemory    = "128Mi"
	settleWindow = 30 * time.Second
)

type result struct {
	size          size
	joist         bool
	bought, empty int
	rssMiB, cpuS  float64
	bound         time.Duration
	requests      map[string]float64
	// settled are the apiserver requests by verb during the settle window (manager runs alone).
	settled map[string]float64
	// passes, passMean and passMax describe the disruption passes run so far (manager metrics).
	passes            int
	passMean, passP99 time.Duration
	// idlePasses, idleMean and idleP99 describe the passes of the settle window alone.
	idlePasses        int
	idleMean, idleP99 time.Duration
	// timeline is when nodes appeared, turned Ready and were released, and pods were bound.
	timeline string
}

func (r result) row() string {
	who, rss, cpu, per := "floor", "–", "–", "–"
	if r.joist {
		who = "Joist"
		rss = fmt.Sprintf("%.0f", r.rssMiB)
		cpu = fmt.Sprintf("%.1f", r.cpuS)
		per = fmt.Sprintf("%.2f", r.cpuS/float64(r.size.pods)*1000)
	}
	var verbs []string
	requests := byVerb(r.requests)
	for _, v := range slices.Sorted(maps.Keys(requests)) {
		if requests[v] >= 1 {
			verbs = append(verbs, fmt.Sprintf("%s %.0f", v, requests[v]))
		}
	}
	return fmt.Sprintf("| %d / %d | %s | %d | %d | %s | %.1fs | %s | %s | %s |", r.size.pods, r.size.nodes, who, r.bought, r.empty, rss,
		r.bound.Seconds(), cpu, per, strings.Join(verbs, ", "))
}

// timelineRow is when the run's milestones happened.
func (r result) timelineRow() string {
	who := "floor"
	if r.joist {
		who = "Joist"
	}
	return fmt.Sprintf("- %d / %d, %s: %s", r.size.pods, r.size.nodes, who, r.timeline)
}

// passRow is the disruption loop's cost at this size once the cluster settled.
func (r result) passRow() string {
	var verbs []string
	for _, v := range slices.Sorted(maps.Keys(r.settled)) {
		if r.settled[v] >= 1 {
			verbs = append(verbs, fmt.Sprintf("%s %.0f", v, r.settled[v]))
		}
	}
	return fmt.Sprintf("| %d / %d | %d | %s | %s | %d | %s | %s | %s |", r.size.pods, r.size.nodes, r.passes, r.passMean.Round(time.Millisecond),
		r.passP99, r.idlePasses, r.idleMean.Round(time.Millisecond), r.idleP99, strings.Join(verbs, ", "))
}

// run measures one size; joist is the manager binary, or "" for the floor. With profileDir, the
// manager's CPU and heap profiles are saved in profileDir/PODS-NODES. managerArgs follow the
// manager's other flags.
func run(ctx context.Context, sz size, joist string, timeout time.Duration, profileDir string, managerArgs []string) (_ result, err error) {
	res := result{size: sz, joist: joist != ""}
	perNode := sz.pods / sz.nodes
	if perNode > allocPods {
		return res, fmt.Errorf("%d pods per node: at most %d fit a node", perNode, allocPods)
	}
	e, err := env.Start(env.Options{})
	if err != nil {
		return res, err
	}
	defer func() {
		if stopErr := e.Stop(); err == nil {
			err = stopErr
		}
	}()
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return res, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mgr        *env.Manager
		metricsURL string
		prof       *profiler
	)
	if res.joist {
		if err := setUpPool(runCtx, kube); err != nil {
			return res, err
		}
		port, err := env.FreePort()
		if err != nil {
			return res, err
		}
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		args := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false"}
		pprofAddr := ""
		if profileDir != "" {
			pport, err := env.FreePort()
			if err != nil {
				return res, err
			}
			pprofAddr = fmt.Sprintf("127.0.0.1:%d", pport)
			args = append(args, "--pprof-bind-address="+pprofAddr)
		}
		args = append(args, managerArgs...)
		if mgr, err = e.StartManager(env.ManagerOptions{Binary: joist, Args: args}); err != nil {
			return res, err
		}
		defer mgr.Stop(30 * time.Second)
		fmt.Printf("%d / %d: manager log %s\n", sz.pods, sz.nodes, mgr.LogPath())
		if err := waitFor(runCtx, 3*time.Minute, func() (bool, error) {
			np := &v1.NodePool{}
			if err := kube.Get(runCtx, client.ObjectKey{Name: "general"}, np); err != nil {
				return false, err
			}
			return np.IsTrue(v1.ConditionTypeReady), nil
		}); err != nil {
			return res, fmt.Errorf("waiting for the NodePool to turn Ready (manager log %s): %w", mgr.LogPath(), err)
		}
		if pprofAddr != "" {
			if prof, err = startProfiler(runCtx, pprofAddr, filepath.Join(profileDir, fmt.Sprintf("%d-%d", sz.pods, sz.nodes)), mgr.Pid()); err != nil {
				return res, err
			}
			defer prof.close()
		}
	} else if err := parallel(sz.nodes, func(i int) error { return registerPlannedNode(runCtx, kube, i) }); err != nil {
		return res, fmt.Errorf("registering planned nodes: %w", err)
	}
	stand, err := startStandIn(runCtx, cs, res.joist)
	if err != nil {
		return res, err
	}
	before, err := apiserverRequests(runCtx, cs)
	if err != nil {
		return res, err
	}
	writesBefore, err := writeRequests(runCtx, cs)
	if err != nil {
		return res, err
	}
	cpu := resource.NewMilliQuantity(int64(allocCPU/perNode), resource.DecimalSI)
	apiCPUBefore, apiCPUErr := apiserverCPU()
	if prof != nil {
		defer func(done <-chan struct{}) { <-done }(profileAPIServer(runCtx, cs, filepath.Join(prof.dir, "apiserver-cpu.pb.gz")))
	}
	// The manager's CPU before the pods (start-up, caches synced), at all bound and at the end split
	// its CPU-seconds into start-up, placing the pods and the settle window's disruption passes.
	var cpuStart float64
	if mgr != nil {
		if _, cpuStart, err = mgr.Stats(); err != nil {
			return res, err
		}
	}
	start := time.Now()
	if err := parallel(sz.pods, func(i int) error { return createPod(runCtx, kube, i, *cpu) }); err != nil {
		return res, fmt.Errorf("creating pods: %w", err)
	}
	created := time.Now()
	if err := waitFor(runCtx, timeout, func() (bool, error) {
		if mgr != nil && mgr.Exited() {
			return false, fmt.Errorf("the manager exited: see %s", mgr.LogPath())
		}
		return stand.bound.Load() >= int64(sz.pods), nil
	}); err != nil {
		return res, fmt.Errorf("%d of %d pods bound after %s (%d unschedulable in the last cycle; %s; %s): %w", stand.bound.Load(), sz.pods, timeout,
			stand.unscheduled.Load(), stand.diagnose(), stand.timeline.summary(start, created), err)
	}
	res.bound = time.Since(start)
	res.timeline = stand.timeline.summary(start, created)
	if apiCPUBound, err := apiserverCPU(); err == nil && apiCPUErr == nil {
		res.timeline += fmt.Sprintf("; apiserver CPU %.1f s in the %.1f s to all bound", apiCPUBound-apiCPUBefore, res.bound.Seconds())
	}
	var cpuBound float64
	if mgr != nil {
		rssBound, cpu, err := mgr.Stats()
		if err != nil {
			return res, err
		}
		cpuBound = cpu
		res.timeline += fmt.Sprintf("; manager CPU %.1f s at start-up, %.1f s to all bound (%.2f per 1k pods), peak RSS %.0f MiB by all bound",
			cpuStart, cpuBound-cpuStart, (cpuBound-cpuStart)/float64(sz.pods)*1000, rssBound)
	}
	if writesBound, err := writeRequests(runCtx, cs); err == nil {
		res.timeline += "; " + writesSince(writesBefore, writesBound)
	}
	if prof != nil {
		if err := prof.heap(runCtx, "heap-bound.pb.gz"); err != nil {
			return res, err
		}
	}
	if res.joist {
		// Give the manager a few disruption passes over the settled cluster: it is part of its cost,
		// and empty nodes it would remove should be gone before they are counted.
		settleStart, err := apiserverRequests(runCtx, cs)
		if err != nil {
			return res, err
		}
		// The passes so far, to tell the settle window's (idle: nothing left to place or remove)
		// from those run while the pods were placed. One scrape more, before the window.
		passesBound, err := passHistogram(metricsURL)
		if err != nil {
			return res, err
		}
		time.Sleep(settleWindow)
		settleEnd, err := apiserverRequests(runCtx, cs)
		if err != nil {
			return res, err
		}
		res.settled = map[string]float64{}
		for k, n := range settleEnd {
			res.settled[k] = n - settleStart[k]
		}
		if prof != nil {
			if err := prof.heap(runCtx, "heap-settled.pb.gz"); err != nil {
				return res, err
			}
		}
		passesEnd, err := passHistogram(metricsURL)
		if err != nil {
			return res, err
		}
		res.passes, res.passMean, res.passP99 = passesEnd.stats()
		res.idlePasses, res.idleMean, res.idleP99 = passesEnd.since(passesBound).stats()
		if res.rssMiB, res.cpuS, err = mgr.Stats(); err != nil {
			return res, err
		}
		res.timeline += fmt.Sprintf("; manager CPU %.1f s in the settle window", res.cpuS-cpuBound)
		var claims v1.NodeClaimList
		if err := kube.List(runCtx, &claims); err != nil {
			return res, err
		}
		res.bought = len(claims.Items)
	}
	nodes, empty := stand.emptyNodes()
	if !res.joist {
		res.bought = nodes
	}
	res.empty = empty
	after, err := apiserverRequests(runCtx, cs)
	if err != nil {
		return res, err
	}
	res.requests = map[string]float64{}
	for k, n := range after {
		res.requests[k] = n - before[k]
	}
	return res, nil
}

func setUpPool(ctx context.Context, kube client.Client) error {
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
			{Key: "joist.dev/instance-cpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"2"}},
		},
		NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
	}}}}
	for _, obj := range []client.Object{nc, np} {
		if err := kube.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T: %w", obj, err)
		}
	}
	return nil
}

// registerPlannedNode creates one of the floor's nodes, Ready and untainted, with the planned type's
// allocatable.
func registerPlannedNode(ctx context.Context, kube client.Client, i int) error {
	res := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(allocCPU, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(allocMemory), corev1.ResourcePods: *resource.NewQuantity(allocPods, resource.DecimalSI)}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("planned-%05d", i), Labels: map[string]string{
		corev1.LabelInstanceTypeStable: planType, corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux"}}}
	if err := kube.Create(ctx, n); err != nil {
		return err
	}
	n.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady,
		Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if err := kube.Status().Update(ctx, n); err != nil {
		return err
	}
	// The apiserver's TaintNodesByCondition admission tainted it not-ready on creation; a registered
	// node's lifecycle controller has lifted that taint by now.
	return kube.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":null}}`)))
}

func createPod(ctx context.Context, kube client.Client, i int, cpu resource.Quantity) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%05d", i), Namespace: "default", Labels: map[string]string{"app": "scale"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse(podMemory)}}}}}}
	return kube.Create(ctx, p)
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
}

// apiserverRequests reads apiserver_request_total summed by "VERB resource[/subresource]".
func apiserverRequests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	return env.ApiserverRequests(ctx, cs, func(labels map[string]string) string {
		if labels["verb"] == "" {
			return ""
		}
		return requestKey(labels)
	})
}

// byVerb sums requests keyed "VERB resource" by verb.
func byVerb(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, n := range m {
		verb, _, _ := strings.Cut(k, " ")
		out[verb] += n
	}
	return out
}

// histogram is joist_disruption_pass_duration_seconds as scraped: its count, sum and cumulative
// buckets by upper bound.
type histogram struct {
	count, sum float64
	buckets    map[float64]float64
}

// passHistogram scrapes the manager's disruption pass histogram.
func passHistogram(url string) (histogram, error) {
	h := histogram{buckets: map[float64]float64{}}
	resp, err := http.Get(url) //nolint:gosec // the benchmark's own manager on localhost
	if err != nil {
		return h, fmt.Errorf("reading manager metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return h, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		switch {
		case strings.HasPrefix(line, "joist_disruption_pass_duration_seconds_sum"):
			h.sum = v
		case strings.HasPrefix(line, "joist_disruption_pass_duration_seconds_count"):
			h.count = v
		case strings.HasPrefix(line, `joist_disruption_pass_duration_seconds_bucket{le="`):
			le := strings.TrimPrefix(line, `joist_disruption_pass_duration_seconds_bucket{le="`)
			le = le[:strings.Index(le, `"`)]
			bound, err := strconv.ParseFloat(le, 64)
			if le == "+Inf" {
				bound, err = math.Inf(1), nil
			}
			if err == nil {
				h.buckets[bound] = v
			}
		}
	}
	return h, nil
}

// since is the passes observed after before.
func (h histogram) since(before histogram) histogram {
	out := histogram{count: h.count - before.count, sum: h.sum - before.sum, buckets: map[float64]float64{}}
	for le, n := range h.buckets {
		out.buckets[le] = n - before.buckets[le]
	}
	return out
}

// stats are the number of passes, their mean and the bucket bound under which 99 % fall.
func (h histogram) stats() (n int, mean, p99 time.Duration) {
	if h.count == 0 {
		return 0, 0, 0
	}
	for _, le := range slices.Sorted(maps.Keys(h.buckets)) {
		if h.buckets[le] >= 0.99*h.count {
			if !math.IsInf(le, 1) {
				p99 = time.Duration(le * float64(time.Second))
			}
			break
		}
	}
	return int(h.count), time.Duration(h.sum / h.count * float64(time.Second)), p99
}
