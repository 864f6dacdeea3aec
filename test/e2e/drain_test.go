package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// TestDrainOrderAndDoNotDisrupt deletes a node running a plain pod, a system-cluster-critical pod
// and a do-not-disrupt pod: the plain pod is evicted first, the critical one after it, and the
// do-not-disrupt pod stays until the terminationGracePeriod runs out, then goes with the node.
func TestDrainOrderAndDoNotDisrupt(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(4 * time.Minute)
	np := singleTypePool()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	grace := 25 * time.Second
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
	s.create(ctx, kwokNodeClass(0), np)
	s.startManager()
	d := deployment("plain", 1, "500m", "512Mi")
	s.create(ctx, d)
	pods := s.waitRunning(ctx, 1, d.Spec.Template.Labels)
	node := pods[0].Spec.NodeName
	bare := func(name, ns string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
			},
		}
		mutate(p)
		return p
	}
	critical := bare("critical", "kube-system", func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" })
	guarded := bare("guarded", "default", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"} })
	s.create(ctx, critical, guarded)
	s.waitRunning(ctx, 1, map[string]string{"app": "critical"})
	s.waitRunning(ctx, 1, map[string]string{"app": "guarded"})

	claim := s.claims()[0]
	deleted := time.Now()
	if err := s.kube.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	// gone[name] is when the pod was first seen terminating or gone.
	gone := map[string]time.Time{}
	watch := func(ctx context.Context) {
		for _, p := range []client.Object{critical, guarded} {
			cur := &corev1.Pod{}
			err := s.kube.Get(ctx, client.ObjectKeyFromObject(p), cur)
			if _, seen := gone[p.GetName()]; !seen && (apierrors.IsNotFound(err) || (err == nil && !cur.DeletionTimestamp.IsZero())) {
				gone[p.GetName()] = time.Now()
			}
		}
		var list corev1.PodList
		_ = s.kube.List(ctx, &list, client.MatchingLabels(d.Spec.Template.Labels))
		for _, p := range list.Items {
			if p.Name == pods[0].Name && p.DeletionTimestamp.IsZero() {
				return
			}
		}
		if _, seen := gone["plain"]; !seen {
			gone["plain"] = time.Now()
		}
	}
	s.eventually(ctx, "node "+node+" gone", func(ctx context.Context) (bool, error) {
		watch(ctx)
		err := s.kube.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, s.describeClaims)
	for _, name := range []string{"plain", "critical", "guarded"} {
		if _, ok := gone[name]; !ok {
			gone[name] = time.Now()
		}
	}
	if !gone["plain"].Before(gone["critical"]) {
		t.Errorf("critical pod left at %s, before or with the plain pod (%s): critical pods go in a later wave",
			gone["critical"].Sub(deleted), gone["plain"].Sub(deleted))
	}
	if left := gone["guarded"].Sub(deleted); left < grace-2*time.Second {
		t.Errorf("do-not-disrupt pod left %s after the node was deleted, before the %s terminationGracePeriod", left, grace)
	}
	if left := time.Since(deleted); left > grace+45*time.Second {
		t.Errorf("node took %s to go, terminationGracePeriod is %s", left, grace)
	}
}
