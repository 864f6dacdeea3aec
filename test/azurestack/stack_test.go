package azurestack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/azure/fake"
)

// stackManifests are the AKS provider's getting-started AKSNodeClass and a NodePool like the seed's
// general pool (spot and on-demand, amd64, D-family SKUs) with a limit for the guardrails.
const stackManifests = `
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata: {name: default}
spec:
  imageFamily: Ubuntu2204
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.azure.com/sku-family, operator: In, values: [D]}
      nodeClassRef: {group: karpenter.azure.com, kind: AKSNodeClass, name: default}
  limits: {cpu: "100"}
`

// startedStack is a stack whose manager runs with the manifests applied and the class Ready, and a
// context that ends after timeout (or with the test).
func startedStack(t *testing.T, timeout time.Duration) (*stack, context.Context) {
	t.Helper()
	s := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	s.start()
	s.setUp(ctx)
	return s, ctx
}

// setUp applies the manifests and waits for the AKSNodeClass to resolve its images through ARM.
func (s *stack) setUp(ctx context.Context) {
	s.t.Helper()
	for _, doc := range strings.Split(stackManifests, "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			s.t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := s.kube.Create(ctx, u); err != nil {
			s.t.Fatalf("applying %s: %v", u.GetKind(), err)
		}
	}
	eventually(ctx, s.t, "AKSNodeClass default Ready", 90*time.Second, func() (bool, string) {
		nc := &azv1beta1.AKSNodeClass{}
		if err := s.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return false, err.Error()
		}
		return nc.IsTrue(azv1beta1.ConditionTypeReady), fmt.Sprintf("%+v", nc.Status.Conditions)
	})
}

// pendingPod creates a pod no node fits; the kube-scheduler marks it unschedulable.
func (s *stack) pendingPod(ctx context.Context, name string) *corev1.Pod {
	s.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}},
	}
	if err := s.kube.Create(ctx, pod); err != nil {
		s.t.Fatal(err)
	}
	return pod
}

// launchedClaim waits for the one NodeClaim to be Launched.
func (s *stack) launchedClaim(ctx context.Context, timeout time.Duration) *v1.NodeClaim {
	s.t.Helper()
	var claim v1.NodeClaim
	eventually(ctx, s.t, "a NodeClaim launched on an Azure VM", timeout, func() (bool, string) {
		list := &v1.NodeClaimList{}
		if err := s.kube.List(ctx, list); err != nil {
			return false, err.Error()
		}
		for _, nc := range list.Items {
			if nc.IsTrue(v1.ConditionTypeLaunched) {
				claim = nc
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d claims, VM PUTs %d, VMs %d", len(list.Items), len(s.arm.Calls("PUT", "/virtualMachines/")), len(s.arm.VMs()))
	})
	return &claim
}

// assertOneVM checks that ARM holds exactly the claim's VM and NIC and got one create of each.
func (s *stack) assertOneVM(claim *v1.NodeClaim) *armcompute.VirtualMachine {
	s.t.Helper()
	name := "aks-" + claim.Name
	vms := s.arm.VMs()
	vm := vms[name]
	if len(vms) != 1 || vm == nil {
		s.t.Fatalf("VMs %v, want only %s", keys(vms), name)
	}
	if nics := s.arm.NICs(); len(nics) != 1 || nics[0] != name {
		s.t.Errorf("NICs %v, want only %s", nics, name)
	}
	if n := len(s.arm.Calls("PUT", "/virtualMachines/")); n != 1 {
		s.t.Errorf("VM creates (PUT) = %d, want 1", n)
	}
	wantID := "azure:///subscriptions/" + fake.Subscription + "/resourceGroups/" + fake.ResourceGroup + "/providers/Microsoft.Compute/virtualMachines/" + name
	if claim.Status.ProviderID != wantID || "azure://"+*vm.ID != wantID {
		s.t.Errorf("claim providerID %s, VM %s; want %s", claim.Status.ProviderID, *vm.ID, wantID)
	}
	if vm.Tags[azv1beta1.TagKeyNodeClaim] == nil || *vm.Tags[azv1beta1.TagKeyNodeClaim] != claim.Name || *vm.Tags[azv1beta1.TagKeyCluster] != clusterName {
		s.t.Errorf("VM tags %v do not name claim %s and cluster %s", vm.Tags, claim.Name, clusterName)
	}
	return vm
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// registerAndSchedule registers the claim's node from the VM's custom data and waits for the
// claim to turn Ready and the kube-scheduler to bind pod to the node.
func (s *stack) registerAndSchedule(ctx context.Context, claim *v1.NodeClaim, pod *corev1.Pod) string {
	s.t.Helper()
	return s.registerAndScheduleWith(ctx, ctx, claim, pod)
}

// registerAndScheduleWith is registerAndSchedule with the node's kubelet running until kubeletCtx ends.
func (s *stack) registerAndScheduleWith(kubeletCtx, ctx context.Context, claim *v1.NodeClaim, pod *corev1.Pod) string {
	s.t.Helper()
	b := parseCustomData(s.t, s.arm.LastCustomData())
	if got := b.flags["--provider-id"]; got != claim.Status.ProviderID {
		s.t.Fatalf("custom data's --provider-id %q, claim's %q", got, claim.Status.ProviderID)
	}
	if !hasTaint(b.taints, v1.UnregisteredNoExecuteTaint) {
		s.t.Errorf("the kubelet registers with taints %s, without %s", fmtTaints(b.taints), v1.UnregisteredNoExecuteTaint.ToString())
	}
	node := "aks-" + claim.Name // the VM's computer name, the kubelet's hostname
	register(ctx, s.t, s.kube, node, b, claim)
	go kubelet(kubeletCtx, s.kube, node)
	eventually(ctx, s.t, "the claim Ready on its node", 90*time.Second, func() (bool, string) {
		nc := &v1.NodeClaim{}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(claim), nc); err != nil {
			return false, err.Error()
		}
		return nc.IsTrue(v1.ConditionTypeReady) && nc.IsTrue(v1.ConditionTypeInitialized) && nc.Status.NodeName == node,
			fmt.Sprintf("nodeName %q, conditions %+v", nc.Status.NodeName, nc.Status.Conditions)
	})
	eventually(ctx, s.t, "the pod bound to the node by the kube-scheduler", 60*time.Second, func() (bool, string) {
		p := &corev1.Pod{}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == node, fmt.Sprintf("nodeName %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})
	n := &corev1.Node{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		s.t.Fatal(err)
	}
	if hasTaint(n.Spec.Taints, v1.UnregisteredNoExecuteTaint) {
		s.t.Errorf("node %s still carries %s", node, v1.UnregisteredTaintKey)
	}
	return node
}

func hasTaint(ts []corev1.Taint, want corev1.Taint) bool {
	for i := range ts {
		if ts[i].MatchTaint(&want) {
			return true
		}
	}
	return false
}

// retire deletes the claim and waits for Joist to drain and delete the node and delete the VM and
// its NIC through ARM, and for the claim's finalizer to go.
func (s *stack) retire(ctx context.Context, claim *v1.NodeClaim, node string) {
	s.t.Helper()
	if err := s.kube.Delete(ctx, claim); err != nil {
		s.t.Fatal(err)
	}
	eventually(ctx, s.t, "the VM and its NIC deleted, the claim and node gone", 90*time.Second, func() (bool, string) {
		claimErr := s.kube.Get(ctx, client.ObjectKeyFromObject(claim), &v1.NodeClaim{})
		nodeErr := s.kube.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		return len(s.arm.VMs()) == 0 && len(s.arm.NICs()) == 0 && apierrors.IsNotFound(claimErr) && apierrors.IsNotFound(nodeErr),
			fmt.Sprintf("VMs %v, NICs %v, claim %v, node %v", keys(s.arm.VMs()), s.arm.NICs(), claimErr, nodeErr)
	})
	if n := len(s.arm.Calls("DELETE", "/virtualMachines/")); n < 1 {
		s.t.Errorf("VM deletes = %d: the VM went without a DELETE", n)
	}
}

// countStatus is how many ARM answers had the status.
func (s *stack) countStatus(status int) int {
	n := 0
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		for _, c := range s.arm.Calls(m, "/") {
			if c.Status == status {
				n++
			}
		}
	}
	return n
}

// TestPendingPodLaunchesAnAzureVMItsNodeRegistersAndRetires: a pending pod → one NIC and one VM
// through ARM (authenticated by managed identity, throttled twice with Retry-After) → the node the
// VM's custom data registers → the claim Ready and the pod bound → the claim deleted → the VM and
// NIC deleted, the node and the claim gone.
func TestPendingPodLaunchesAnAzureVMItsNodeRegistersAndRetires(t *testing.T) {
	s, ctx := startedStack(t, 4*time.Minute)
	s.arm.ThrottleNext(2)
	pod := s.pendingPod(ctx, "app")
	claim := s.launchedClaim(ctx, 90*time.Second)
	vm := s.assertOneVM(claim)
	if got := s.countStatus(429); got != 2 {
		t.Errorf("throttled answers = %d, want the 2 injected (each retried after Retry-After)", got)
	}
	if s.arm.TokensIssued() == 0 || s.countStatus(401) != 0 {
		t.Errorf("managed identity tokens issued %d, unauthenticated calls %d", s.arm.TokensIssued(), s.countStatus(401))
	}
	if size := string(*vm.Properties.HardwareProfile.VMSize); !strings.HasPrefix(size, "Standard_D") || claim.Labels[v1.LabelInstanceType] != size {
		t.Errorf("VM size %s, claim instance type %s: the pool allows the D family only", size, claim.Labels[v1.LabelInstanceType])
	}
	node := s.registerAndSchedule(ctx, claim, pod)
	s.retire(ctx, claim, node)
}

// TestVMCreateOutlivingTheManagerLaunchesNoSecondVM: ARM accepts the VM create but its operation is
// still running when the manager is SIGKILLed; the restarted manager, whose claim never recorded the
// launch, finds the VM by its name and launches no second one (no second NIC either), and the claim
// goes on to register and retire.
func TestVMCreateOutlivingTheManagerLaunchesNoSecondVM(t *testing.T) {
	s, ctx := startedStack(t, 4*time.Minute)
	s.arm.HoldCreates()
	pod := s.pendingPod(ctx, "app")
	eventually(ctx, t, "ARM accepting a VM create", 90*time.Second, func() (bool, string) {
		return len(s.arm.Calls("PUT", "/virtualMachines/")) == 1, fmt.Sprintf("VM PUTs %d", len(s.arm.Calls("PUT", "/virtualMachines/")))
	})
	polled := len(s.arm.Calls("GET", "/operations/"))
	eventually(ctx, t, "the manager polling the running VM create", 90*time.Second, func() (bool, string) {
		n := len(s.arm.Calls("GET", "/operations/"))
		return n >= polled+2, fmt.Sprintf("operation polls since the PUT was accepted %d", n-polled)
	})
	s.kill()
	list := &v1.NodeClaimList{}
	if err := s.kube.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status.ProviderID != "" {
		t.Fatalf("before the restart: %d claims (providerID %q), want one that never recorded its launch", len(list.Items), list.Items[0].Status.ProviderID)
	}
	s.arm.ReleaseCreates()
	s.start()
	claim := s.launchedClaim(ctx, 90*time.Second)
	s.assertOneVM(claim)
	if n := len(s.arm.Calls("PUT", "/networkInterfaces/")); n != 1 {
		t.Errorf("NIC creates = %d, want 1", n)
	}
	node := s.registerAndSchedule(ctx, claim, pod)
	s.retire(ctx, claim, node)
}
