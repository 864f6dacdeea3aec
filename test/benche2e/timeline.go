package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/joist-dev/joist/api/v1"
)

// pinTaintKey is the key of the taint Joist holds a released node's room with (nomination.PinTaintKey;
// the benchmark does not import the manager's packages).
const pinTaintKey = "joist.dev/planned"

// timeline watches pods and nodes and records when each milestone of a run was first reached. It
// watches rather than polls: listing 1,000 pods every few milliseconds would load the apiserver that
// is being measured.
type timeline struct {
	start time.Time
	want  int

	mu                                                sync.Mutex
	created, unschedulable, nominated, bound, running map[types.UID]bool
	allCreated, firstUnschedulable, lastUnschedulable time.Duration
	firstBound, allBound, allRunning, firstNodeReady  time.Duration
	firstNominated, lastNominated                     time.Duration
	// pinned holds the pods seen tolerating a Joist pin taint (joist.dev/planned); lastPinned is when
	// the last of them was first seen so.
	pinned     map[types.UID]bool
	lastPinned time.Duration
	// boundShare holds when a quarter, half, three quarters and 90 % of the pods were bound: with
	// nominations the kube-scheduler binds slowly at first and faster as the nominated pods drain
	// (each cycle adds every other pod nominated to the pod's node), the floor's pods bind evenly.
	boundShare                                       [len(boundShares)]time.Duration
	nodeSeen, nodeReady, nodeTaintFree, nodeReleased map[string]time.Duration
	nodeNotReadyTaintGone                            map[string]time.Duration
	claimSeen                                        map[string]time.Duration
	done                                             chan struct{}
}

func watchTimeline(ctx context.Context, cfg *rest.Config, want int) (*timeline, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf" // as the scheduler and controller-manager watch
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	t := &timeline{want: want, created: map[types.UID]bool{}, unschedulable: map[types.UID]bool{}, nominated: map[types.UID]bool{},
		bound: map[types.UID]bool{}, running: map[types.UID]bool{}, pinned: map[types.UID]bool{}, done: make(chan struct{}),
		nodeSeen: map[string]time.Duration{}, nodeReady: map[string]time.Duration{}, nodeTaintFree: map[string]time.Duration{},
		nodeReleased: map[string]time.Duration{}, nodeNotReadyTaintGone: map[string]time.Duration{}, claimSeen: map[string]time.Duration{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	onPod := func(obj interface{}) {
		if pod, ok := obj.(*corev1.Pod); ok {
			t.pod(pod)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, obj interface{}) { onPod(obj) },
	}); err != nil {
		return nil, err
	}
	nodes := informers.NewSharedInformerFactory(cs, 0)
	onNode := func(obj interface{}) {
		if node, ok := obj.(*corev1.Node); ok {
			t.node(node)
		}
	}
	if _, err := nodes.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, obj interface{}) { onNode(obj) },
	}); err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	claims := metadatainformer.NewSharedInformerFactory(meta, 0)
	onClaim := func(obj interface{}) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			t.claim(m.Name)
		}
	}
	if _, err := claims.ForResource(v1.GroupVersion.WithResource("nodeclaims")).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onClaim,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	nodes.Start(ctx.Done())
	claims.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	nodes.WaitForCacheSync(ctx.Done())
	claims.WaitForCacheSync(ctx.Done())
	return t, nil
}

// begin sets time zero: the moment the Deployments are created.
func (t *timeline) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

// since is the time from the run's start; 0 before it (the floor registers its nodes before the run
// starts, and those are not milestones of the run).
func (t *timeline) since() time.Duration {
	if t.start.IsZero() {
		return 0
	}
	return time.Since(t.start)
}

func (t *timeline) pod(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mark := func(set map[types.UID]bool, first, all *time.Duration) {
		if set[pod.UID] {
			return
		}
		set[pod.UID] = true
		if first != nil && *first == 0 {
			*first = t.since()
		}
		if all != nil && len(set) == t.want {
			*all = t.since()
		}
	}
	mark(t.created, nil, &t.allCreated)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
			if !t.unschedulable[pod.UID] {
				t.lastUnschedulable = t.since()
			}
			mark(t.unschedulable, &t.firstUnschedulable, nil)
		}
	}
	if pod.Status.NominatedNodeName != "" && !t.nominated[pod.UID] {
		mark(t.nominated, &t.firstNominated, nil)
		t.lastNominated = t.since()
	}
	if !t.pinned[pod.UID] && slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == pinTaintKey }) {
		t.pinned[pod.UID] = true
		t.lastPinned = t.since()
	}
	if pod.Spec.NodeName != "" {
		mark(t.bound, &t.firstBound, &t.allBound)
		for i, share := range boundShares {
			if t.boundShare[i] == 0 && len(t.bound) >= t.want*share/100 {
				t.boundShare[i] = t.since()
			}
		}
	}
	if pod.Status.Phase == corev1.PodRunning {
		if !t.running[pod.UID] && len(t.running) == t.want-1 {
			defer close(t.done)
		}
		mark(t.running, nil, &t.allRunning)
	}
}

func (t *timeline) node(node *corev1.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.nodeSeen[node.Name]; !ok {
		t.nodeSeen[node.Name] = t.since()
	}
	for _, c := range node.Status.Conditions {
		if _, ok := t.nodeReady[node.Name]; !ok && c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			t.nodeReady[node.Name] = t.since()
			if t.firstNodeReady == 0 {
				t.firstNodeReady = t.since()
			}
		}
	}
	notReady := false
	for _, taint := range node.Spec.Taints {
		notReady = notReady || taint.Key == corev1.TaintNodeNotReady
	}
	if _, ok := t.nodeNotReadyTaintGone[node.Name]; !ok && !notReady && t.nodeReady[node.Name] != 0 {
		t.nodeNotReadyTaintGone[node.Name] = t.since()
	}
	if _, ok := t.nodeTaintFree[node.Name]; !ok && len(node.Spec.Taints) == 0 {
		t.nodeTaintFree[node.Name] = t.since()
	}
	unregistered := false
	for _, taint := range node.Spec.Taints {
		unregistered = unregistered || taint.Key == v1.UnregisteredTaintKey
	}
	if _, ok := t.nodeReleased[node.Name]; !ok && !unregistered {
		t.nodeReleased[node.Name] = t.since()
	}
}

func (t *timeline) claim(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.claimSeen[name]; !ok && !t.start.IsZero() {
		t.claimSeen[name] = t.since()
	}
}

// nodes lists, per node in order of appearance, when it appeared, turned Ready and lost its last taint.
func (t *timeline) nodes() string {
	names := make([]string, 0, len(t.nodeSeen))
	for n := range t.nodeSeen {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return t.nodeSeen[names[i]] < t.nodeSeen[names[j]] })
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%.1f/%.1f/%.1f/%.1f/%.1f ", t.nodeSeen[n].Seconds(), t.nodeReady[n].Seconds(), t.nodeNotReadyTaintGone[n].Seconds(), t.nodeReleased[n].Seconds(), t.nodeTaintFree[n].Seconds())
	}
	return b.String()
}

// boundShares are the percentages of the pods whose binding times the timeline reports.
var boundShares = [...]int{25, 50, 75, 90}

// boundProfile is "bound 25/50/75/90 %: 4.1/6.0/7.2/7.9s"; the caller holds t.mu.
func (t *timeline) boundProfile() string {
	var b strings.Builder
	b.WriteString("bound ")
	for i, share := range boundShares {
		if i > 0 {
			b.WriteString("/")
		}
		fmt.Fprint(&b, share)
	}
	b.WriteString(" %: ")
	for i, d := range t.boundShare {
		if i > 0 {
			b.WriteString("/")
		}
		fmt.Fprintf(&b, "%.1f", d.Seconds())
	}
	return b.String() + "s"
}

// wait blocks until every pod runs.
func (t *timeline) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("%d of %d pods running: %w", len(t.running), t.want, ctx.Err())
	case <-t.done:
		return nil
	}
}

func (t *timeline) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("all pods created %.1fs, first Unschedulable %.1fs (%d marked), first node Ready %.1fs, first bound %.1fs, %s\n       nodes appeared/Ready/not-ready taint gone/released/taint-free: %s",
		t.allCreated.Seconds(), t.firstUnschedulable.Seconds(), len(t.unschedulable), t.firstNodeReady.Seconds(), t.firstBound.Seconds(), t.boundProfile(), t.nodes())
}

// requestCounts reads the apiserver's request counters by verb, resource and subresource, largest
// first: which writes and reads a run cost the control plane.
func requestCounts(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("reading apiserver metrics: %w", err)
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(line[strings.Index(line, "{")+1:strings.LastIndex(line, "}")], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		n, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		counts[key] += n
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var b strings.Builder
	for i, k := range keys {
		if i == 12 {
			break
		}
		fmt.Fprintf(&b, "%s %.0f; ", k, counts[k])
	}
	return b.String(), nil
}
