package main

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joist-dev/joist/solver/consolidatebench"
)

// TestIndexedPodsListsLikeTheFakeClient: a per-node pod list from the index holds exactly the
// pods the fake client's own (encode-everything) list returns; other lists go to the fake client.
func TestIndexedPodsListsLikeTheFakeClient(t *testing.T) {
	ctx := context.Background()
	fake := fakecr.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	kube := newIndexedPods(fake)
	for i := range 9 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("n%d", i%3)}}
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		kube.add(p)
	}
	for _, node := range []string{"n0", "n1", "n2", "n3"} {
		var got, want corev1.PodList
		if err := kube.List(ctx, &got, client.MatchingFields{"spec.nodeName": node}); err != nil {
			t.Fatal(err)
		}
		if err := fake.List(ctx, &want, client.MatchingFields{"spec.nodeName": node}); err != nil {
			t.Fatal(err)
		}
		if names(got) != names(want) {
			t.Fatalf("node %s: index lists %s, the fake client %s", node, names(got), names(want))
		}
	}
	var all corev1.PodList
	if err := kube.List(ctx, &all); err != nil || len(all.Items) != 9 {
		t.Fatalf("unfiltered list: %d pods, %v; want 9", len(all.Items), err)
	}
}

func names(l corev1.PodList) string {
	s := ""
	for _, p := range l.Items {
		s += p.Name + ","
	}
	return s
}

// TestUpstreamConsolidatesRoundRobin: on a small round-robin cluster (whose pool sets no
// disruption block) upstream's multi-node pass finds candidates and a command; without the API
// server's disruption defaults it found none. Takes ~20 s: upstream waits its 15 s validation delay.
func TestUpstreamConsolidatesRoundRobin(t *testing.T) {
	if testing.Short() {
		t.Skip("waits upstream's 15 s validation delay")
	}
	o, err := upstreamConsolidation(consolidatebench.RoundRobinN(6), "multi")
	if err != nil {
		t.Fatal(err)
	}
	if o.Commands != 1 || o.Removed < 2 || o.Savings <= 0 {
		t.Fatalf("upstream's multi-node pass: %+v, want one command removing several nodes for a saving", o)
	}
}
