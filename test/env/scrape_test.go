package env_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/test/env"
)

// ApiserverRequests parses the real apiserver's /metrics and sums apiserver_request_total by key:
// a ConfigMap created between two reads shows as one more POST of configmaps with code 201.
func TestApiserverRequestsCountsACreate(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	key := func(labels map[string]string) string {
		if labels["resource"] != "configmaps" {
			return ""
		}
		return labels["verb"] + " " + labels["code"]
	}
	before, err := env.ApiserverRequests(ctx, cs, key)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: "default"}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	after, err := env.ApiserverRequests(ctx, cs, key)
	if err != nil {
		t.Fatal(err)
	}
	if n := after["POST 201"] - before["POST 201"]; n != 1 {
		t.Errorf("POST configmaps 201: %v more after one create, want 1 (before %v, after %v)", n, before, after)
	}
}
