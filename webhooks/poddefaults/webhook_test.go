package poddefaults

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// TestInstallNamespaceExcluded: Joist's own pods are never defaulted, whatever the namespaceSelector
// of the webhook configuration says (OLM installs cannot carry the kustomize exclusion).
func TestInstallNamespaceExcluded(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	guardrail := &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: v1alpha1.GuardrailSpec{
		PodDefaults: []v1alpha1.PodDefaults{{DefaultRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
	}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(guardrail,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operators"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}).Build()
	d := &Defaulter{Reader: reader, ExcludeNamespace: "operators"}
	for ns, wantDefaulted := range map[string]bool{"operators": false, "team": true} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		if err := d.Default(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		_, defaulted := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		if defaulted != wantDefaulted {
			t.Errorf("pod in %s: cpu request defaulted = %v, want %v", ns, defaulted, wantDefaulted)
		}
	}
}
