package deploy

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/test/env"
)

// rbacKinds are the objects that make up the manager's identity and permissions.
var rbacKinds = map[string]bool{"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// TestKWOKProviderNeedsTheKWOKOverlay applies config/default's RBAC for real and runs the KWOK
// cloud provider's Create as the manager's ServiceAccount (impersonated, so the apiserver's RBAC
// authorizer decides): launching a node is forbidden. After config/kwok's RBAC is applied, the same
// launch writes the Node — the generated role plus the KWOK component is all the provider needs.
func TestKWOKProviderNeedsTheKWOKOverlay(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	apply := func(objs []*unstructured.Unstructured) {
		t.Helper()
		objs = slices.Clone(objs)
		slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { // Namespace first
			rank := func(o *unstructured.Unstructured) int {
				if o.GetKind() == "Namespace" {
					return 0
				}
				return 1
			}
			return cmp.Compare(rank(a), rank(b))
		})
		for _, o := range objs {
			if !rbacKinds[o.GetKind()] {
				continue
			}
			if err := e.Client.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("joist-test"), client.ForceOwnership); err != nil {
				t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	apply(renderDefault(t).objs)
	if err := e.Client.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}); err != nil {
		t.Fatal(err)
	}

	var sa corev1.ServiceAccount
	renderDefault(t).get(t, "ServiceAccount", "joist-controller-manager", &sa)
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
	}
	asManager, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	provider := kwok.New(asManager, cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0), kwok.Options{InstanceTypes: catalog.Default()})
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "general-rbac1"},
		Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"}},
	}

	_, err = provider.Create(ctx, claim)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("KWOK launch with config/default's RBAC: err = %v, want Forbidden on creating the Node", err)
	}
	t.Logf("config/default: %v", err)

	apply(render(t, "kwok"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		launched, err := provider.Create(ctx, claim)
		if err == nil {
			node := &corev1.Node{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, node); err != nil {
				t.Fatalf("launched %s but its Node is missing: %v", launched.Status.ProviderID, err)
			}
			if node.Spec.ProviderID != launched.Status.ProviderID {
				t.Errorf("node providerID %q, claim's %q", node.Spec.ProviderID, launched.Status.ProviderID)
			}
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("KWOK launch with config/kwok's RBAC: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // the RBAC authorizer's informers catch up
	}
}
