package reliability

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/fields"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slowShutdownFinalizer holds a deleted pod of a consolidation trial for the trial's shutdown time:
// KWOK deletes a pod at once, whatever its grace period, so without it a drain takes a second and no
// kill lands mid-drain. The trial's watcher removes it once the pod has been terminating that long.
const slowShutdownFinalizer = "reliability.joist.dev/slow-shutdown"

// slowDrains gives every pod of the Deployments a shutdown of the trial's length: a long
// terminationGracePeriodSeconds and the finalizer the watcher removes once it has passed.
func slowDrains(deploys []*appsv1.Deployment) {
	for _, d := range deploys {
		d.Spec.Template.Finalizers = append(d.Spec.Template.Finalizers, slowShutdownFinalizer)
		d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(60))
	}
}

// pdbsFor gives each Deployment a PodDisruptionBudget as a cautious team writes them: most
// `maxUnavailable: 1`, one `minAvailable: 50%`.
func pdbsFor(deploys []*appsv1.Deployment) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for i, d := range deploys {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: d.Spec.Selector.DeepCopy()}}
		if i%4 == 2 {
			pdb.Spec.MinAvailable = ptr.To(intstr.FromString("50%"))
		} else {
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		out = append(out, pdb)
	}
	return out
}

// allowedUnavailable is how many of want pods the PDB lets be unavailable (the eviction API's
// reading: minAvailable rounds up, maxUnavailable as given; percentages of want).
func allowedUnavailable(pdb *policyv1.PodDisruptionBudget, want int) int {
	if pdb.Spec.MaxUnavailable != nil {
		n, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, want, true)
		return n
	}
	n, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, want, true)
	return want - n
}

// evicted reports whether the Eviction API evicted the pod (it sets DisruptionTarget
// EvictionByEvictionAPI before deleting it).
func evicted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unschedulable reports whether the kube-scheduler found no node for the pod.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// podWatch follows every pod of the trial's namespace through a watch (every change, not samples):
// it ends slow shutdowns, and counts PDB violations, evictions and pods the kube-scheduler found no
// room for.
type podWatch struct {
	kube     client.Client
	shutdown time.Duration

	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
	// terminatingSince is when each pod was first seen terminating.
	terminatingSince map[types.UID]time.Time
	// pdbs and want (replicas per app after the scale-down) arm the PDB check; nil: not armed.
	pdbs map[string]*policyv1.PodDisruptionBudget
	want map[string]int
	// inViolation marks the PDBs over their allowance now; violations lists each moment one went over.
	inViolation map[string]bool
	violations  []string
	// evictions counts the pods the Eviction API evicted; unschedulable are the pods the scheduler
	// found no room for since arming.
	evictions     int
	unschedulable map[string]bool
}

// watchPods starts the watch (it stops with ctx) and the goroutine that ends slow shutdowns.
func (s *stack) watchPods(ctx context.Context, shutdown time.Duration) *podWatch {
	w := &podWatch{kube: s.kube, shutdown: shutdown, pods: map[types.UID]*corev1.Pod{}, terminatingSince: map[types.UID]time.Time{},
		inViolation: map[string]bool{}, unschedulable: map[string]bool{}}
	cs := kubernetes.NewForConfigOrDie(s.env.Config)
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "default", fields.Everything())
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.observe(obj, false) },
			UpdateFunc: func(_, obj any) { w.observe(obj, false) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				w.observe(obj, true)
			},
		}})
	go informer.Run(ctx.Done())
	go w.endShutdowns(ctx)
	return w
}

// arm starts checking PDBs against the replicas the Deployments were scaled to.
func (w *podWatch) arm(pdbs []*policyv1.PodDisruptionBudget, deploys []*appsv1.Deployment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pdbs, w.want = map[string]*policyv1.PodDisruptionBudget{}, map[string]int{}
	for i, d := range deploys {
		app := d.Spec.Selector.MatchLabels["app"]
		w.pdbs[app] = pdbs[i]
		w.want[app] = int(*d.Spec.Replicas)
	}
}

func (w *podWatch) observe(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.pods[p.UID]; (old == nil || !evicted(old)) && evicted(p) {
		w.evictions++
	}
	if deleted {
		delete(w.pods, p.UID)
		delete(w.terminatingSince, p.UID)
	} else {
		w.pods[p.UID] = p
		if !p.DeletionTimestamp.IsZero() && w.terminatingSince[p.UID].IsZero() {
			w.terminatingSince[p.UID] = time.Now()
		}
	}
	if w.pdbs == nil {
		return
	}
	if unschedulable(p) && !deleted {
		w.unschedulable[p.Namespace+"/"+p.Name] = true
	}
	w.checkLocked(p.Labels["app"])
}

// checkLocked counts a violation when app's PDB goes over its allowance while evicted pods are out:
// fewer pods Ready (and not terminating) than the replicas less the PDB's allowance, with a pod the
// Eviction API evicted still terminating. (The scale-down's own deletions are no evictions.)
func (w *podWatch) checkLocked(app string) {
	pdb := w.pdbs[app]
	if pdb == nil {
		return
	}
	healthy, evictedOut := 0, 0
	for _, p := range w.pods {
		if p.Labels["app"] != app {
			continue
		}
		switch {
		case !p.DeletionTimestamp.IsZero():
			if evicted(p) {
				evictedOut++
			}
		case podReady(p):
			healthy++
		}
	}
	over := w.want[app]-healthy > allowedUnavailable(pdb, w.want[app]) && evictedOut > 0
	if over && !w.inViolation[app] {
		w.violations = append(w.violations, fmt.Sprintf("%s %s: %d of %d pods ready, %d evicted terminating, PDB allows %d unavailable",
			time.Now().Format("15:04:05.000"), app, healthy, w.want[app], evictedOut, allowedUnavailable(pdb, w.want[app])))
	}
	w.inViolation[app] = over
}

// endShutdowns removes the slow-shutdown finalizer from pods terminating for the shutdown time.
func (w *podWatch) endShutdowns(ctx context.Context) {
	for ctx.Err() == nil {
		var due []*corev1.Pod
		w.mu.Lock()
		for uid, since := range w.terminatingSince {
			if p := w.pods[uid]; p != nil && time.Since(since) >= w.shutdown && hasFinalizer(p, slowShutdownFinalizer) {
				due = append(due, p)
			}
		}
		w.mu.Unlock()
		for _, p := range due {
			patch := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			var keep []string
			for _, f := range p.Finalizers {
				if f != slowShutdownFinalizer {
					keep = append(keep, f)
				}
			}
			_ = w.kube.Patch(ctx, patch, client.RawPatch(types.MergePatchType, finalizersPatch(keep)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func finalizersPatch(keep []string) []byte {
	quoted := make([]string, len(keep))
	for i, f := range keep {
		quoted[i] = fmt.Sprintf("%q", f)
	}
	return []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%s]}}`, strings.Join(quoted, ",")))
}

func hasFinalizer(obj metav1.Object, f string) bool {
	for _, x := range obj.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

// draining reports whether a drain is under way now: a pod the Eviction API evicted is still
// terminating (its node's claim deleting, the node tainted).
func (w *podWatch) draining() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		if !p.DeletionTimestamp.IsZero() && evicted(p) {
			return true
		}
	}
	return false
}

// podWatchResult is what the watch saw over a trial.
type podWatchResult struct {
	violations    []string
	unschedulable []string
	evicted       int
}

func (w *podWatch) result() podWatchResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := podWatchResult{violations: append([]string(nil), w.violations...), evicted: w.evictions}
	for name := range w.unschedulable {
		r.unschedulable = append(r.unschedulable, name)
	}
	sort.Strings(r.unschedulable)
	return r
}
