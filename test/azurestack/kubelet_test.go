package azurestack

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
)

// bootstrap is what a VM's custom data tells its kubelet: /etc/default/kubelet's KUBELET_FLAGS
// and KUBELET_NODE_LABELS.
type bootstrap struct {
	flags  map[string]string
	labels map[string]string
	taints []corev1.Taint
}

// parseCustomData reads the custom data ARM received (base64 cloud-config).
func parseCustomData(t *testing.T, b64 string) bootstrap {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("custom data is not base64: %v", err)
	}
	body, ok := strings.CutPrefix(string(data), "#cloud-config\n")
	if !ok {
		t.Fatalf("custom data is not a cloud-config:\n%s", data)
	}
	var cfg struct {
		WriteFiles []struct{ Path, Content string } `json:"write_files"`
	}
	if err := yaml.Unmarshal([]byte(body), &cfg); err != nil {
		t.Fatalf("custom data: %v", err)
	}
	env := map[string]string{}
	for _, f := range cfg.WriteFiles {
		if f.Path != "/etc/default/kubelet" {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(f.Content))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				env[k] = v
			}
		}
	}
	b := bootstrap{flags: map[string]string{}, labels: map[string]string{}}
	for _, f := range strings.Fields(env["KUBELET_FLAGS"]) {
		k, v, _ := strings.Cut(f, "=")
		b.flags[k] = v
	}
	for _, l := range strings.Split(env["KUBELET_NODE_LABELS"], ",") {
		if k, v, ok := strings.Cut(l, "="); ok {
			b.labels[k] = v
		}
	}
	if s := b.flags["--register-with-taints"]; s != "" {
		for _, spec := range strings.Split(s, ",") {
			kv, effect, _ := strings.Cut(spec, ":")
			k, v, _ := strings.Cut(kv, "=")
			b.taints = append(b.taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
		}
	}
	return b
}

// register creates the Node as the kubelet of the VM would: named after the VM's computer name,
// with the provider ID, labels and taints of its custom data, then reports it Ready with the
// claim's capacity. With no kube-controller-manager here, it lifts node.kubernetes.io/not-ready
// (which the apiserver's TaintNodesByCondition admission adds) as the node lifecycle controller would.
func register(ctx context.Context, t *testing.T, kube client.Client, name string, b bootstrap, claim *v1.NodeClaim) {
	t.Helper()
	labels := map[string]string{corev1.LabelHostname: name}
	for k, v := range b.labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: b.flags["--provider-id"], Taints: b.taints},
	}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatalf("registering node %s: %v", name, err)
	}
	update := func(mutate func(n *corev1.Node), status bool) {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			mutate(n)
			if status {
				return kube.Status().Update(ctx, n)
			}
			return kube.Update(ctx, n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(n *corev1.Node) {
		n.Status = corev1.NodeStatus{
			Capacity: claim.Status.Capacity, Allocatable: claim.Status.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
	}, true)
	update(func(n *corev1.Node) {
		var kept []corev1.Taint
		for _, taint := range n.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		n.Spec.Taints = kept
	}, false)
}

// kubelet finishes pod deletions on the node as its kubelet would once containers stopped, until ctx ends.
func kubelet(ctx context.Context, kube client.Client, node string) {
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := kube.List(ctx, pods); err != nil {
			return false, nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == node && p.DeletionTimestamp != nil {
				_ = kube.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: ptr.To(p.UID)})
			}
		}
		return false, nil
	})
}

func eventually(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, detail := cond()
		last = detail
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

func fmtTaints(ts []corev1.Taint) string {
	parts := make([]string, 0, len(ts))
	for i := range ts {
		parts = append(parts, ts[i].ToString())
	}
	return fmt.Sprint(parts)
}
