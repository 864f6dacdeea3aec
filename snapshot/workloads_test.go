package snapshot

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpandAll(t *testing.T) {
	deploy := func(name string, replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}}
	}
	pods, err := ExpandAll([]*appsv1.Deployment{deploy("a", 2), deploy("b", 1)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, strings.Join(strings.Split(p.Name, "-")[:1], ""))
	}
	if got := strings.Join(names, ","); got != "a,a,b" {
		t.Fatalf("pods from %s, want a,a,b in order", got)
	}
	_, err = ExpandAll([]*appsv1.Deployment{deploy("a", 1), deploy("bad", -1)})
	if err == nil || !strings.Contains(err.Error(), "expanding ns/bad: replica count -1 is negative") {
		t.Fatalf("err = %v, want it to name ns/bad", err)
	}
}
