package webhooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

func testDoNotDisrupt(t *testing.T, s *suite) {
	ctx := context.Background()
	namespace(t, s, "batch", map[string]string{"batch": "true"})
	namespace(t, s, "web", nil)
	g := &v1alpha1.Guardrail{ObjectMeta: objectMeta("dnd"), Spec: v1alpha1.GuardrailSpec{DoNotDisrupt: &v1alpha1.DoNotDisruptRules{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "true"}},
		MaxDuration:       &metav1.Duration{Duration: 4 * time.Hour},
		AllowForever:      ptr(false),
	}}}
	s.create(t, g)
	defer s.remove(t, g)

	annotations := func(v string) map[string]string { return map[string]string{v1.DoNotDisruptAnnotationKey: v} }
	pod := func(ns, name, v string) client.Object {
		p := newPod(ns, name, resources(nil, nil))
		p.Annotations = annotations(v)
		return p
	}
	node := func(name, v string) client.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations(v)}}
	}
	cases := []struct {
		name string
		obj  client.Object
		deny string
	}{
		{name: "pod, allowed namespace, 2h", obj: pod("batch", "job-2h", "2h")},
		{name: "pod, false", obj: pod("web", "web-false", "false")},
		{name: "pod, namespace not allowed", obj: pod("web", "web-1h", "1h"),
			deny: `admission webhook "vpod.policy.joist.dev" denied the request: Pod "web-1h" is invalid: metadata.annotations[karpenter.sh/do-not-disrupt]: Forbidden: rule doNotDisrupt.namespaceSelector (Guardrail "dnd"): namespace "web" may not use karpenter.sh/do-not-disrupt; fix: remove the annotation, or ask the platform team to label namespace "web" so it matches the selector "batch=true"`},
		{name: "pod, forever", obj: pod("batch", "job-forever", "true"),
			deny: `rule doNotDisrupt.allowForever (Guardrail "dnd"): "true" (protection without end) is not allowed; fix: set it to a duration of at most 4h0m0s, e.g. "2h", counted from the pod's creation`},
		{name: "pod, too long", obj: pod("batch", "job-5h", "5h"),
			deny: `rule doNotDisrupt.maxDuration (Guardrail "dnd"): "5h" is longer than the allowed 4h0m0s; fix: set it to at most "4h0m0s"`},
		{name: "pod, not a duration", obj: pod("batch", "job-soon", "soon"),
			deny: `rule doNotDisrupt (built-in default): "soon" is neither "true", "false" nor a positive duration such as "4h"`},
		{name: "node, 2h", obj: node("node-2h", "2h")},
		{name: "node, forever", obj: node("node-forever", "true"),
			deny: `admission webhook "vnode.policy.joist.dev" denied the request: Node "node-forever" is invalid: metadata.annotations[karpenter.sh/do-not-disrupt]: Forbidden: rule doNotDisrupt.allowForever (Guardrail "dnd")`},
		{name: "node, too long", obj: node("node-5h", "5h"), deny: `"5h" is longer than the allowed 4h0m0s`},
		{name: "nodeclaim, forever", obj: &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "claim-forever", Annotations: annotations("true")},
			Spec: v1.NodeClaimSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
				NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
			},
		}, deny: `admission webhook "vnodeclaim.policy.joist.dev" denied the request: NodeClaim.karpenter.sh "claim-forever" is invalid: metadata.annotations[karpenter.sh/do-not-disrupt]: Forbidden: rule doNotDisrupt.allowForever`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.client.Create(ctx, c.obj)
			if c.deny == "" {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.deny) {
				t.Fatalf("got %v\nwant %s", err, c.deny)
			}
		})
	}

	t.Run("annotating a node past maxDuration is denied, unrelated updates pass", func(t *testing.T) {
		n := &corev1.Node{}
		if err := s.client.Get(ctx, client.ObjectKey{Name: "node-2h"}, n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Annotations[v1.DoNotDisruptAnnotationKey] = "9h"
		err := s.client.Patch(ctx, n, patch)
		if err == nil || !strings.Contains(err.Error(), `"9h" is longer than the allowed 4h0m0s`) {
			t.Fatalf("got %v", err)
		}
		if err := s.client.Get(ctx, client.ObjectKey{Name: "node-2h"}, n); err != nil {
			t.Fatal(err)
		}
		patch = client.MergeFrom(n.DeepCopy())
		n.Labels = map[string]string{"unrelated": "yes"}
		if err := s.client.Patch(ctx, n, patch); err != nil {
			t.Fatalf("unrelated node update: %v", err)
		}
	})
}

// testManagerStopped: with Joist down, pods are still admitted (fail-open, unmutated) while NodePool
// changes fail with an error naming the webhook.
func testManagerStopped(t *testing.T, s *suite) {
	ctx := context.Background()
	s.stop()
	pod := newPod("team-a", "while-down", resources(nil, nil))
	if err := s.client.Create(ctx, pod); err != nil {
		t.Fatalf("pod creation must succeed while Joist is down: %v", err)
	}
	if _, ok := pod.Annotations[v1alpha1.MutationsAnnotationKey]; ok || pod.Spec.Affinity != nil || pod.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("pod was mutated although the webhook is down: %+v", pod)
	}
	err := s.client.Create(ctx, nodePool("while-down", noGPU))
	if err == nil {
		t.Fatal("NodePool creation must fail while the validating webhook is down")
	}
	for _, want := range []string{`failed calling webhook "vnodepool.policy.joist.dev"`, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	t.Logf("NodePool create with Joist down: %v", err)
}
