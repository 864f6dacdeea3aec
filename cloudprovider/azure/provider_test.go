package azure_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	azureprovider "github.com/joist-dev/joist/cloudprovider/azure"
	"github.com/joist-dev/joist/cloudprovider/azure/fake"
	"github.com/joist-dev/joist/controllers/aksnodeclass"
)

type harness struct {
	fake     *fake.Server
	kube     client.Client
	provider *azureprovider.CloudProvider
	clients  *azureprovider.Clients
}

// newHarness wires the provider to the ARM fake through the real SDK clients and resolves a class
// "default" with the AKSNodeClass controller. The provider reads only AKSNodeClasses and
// NodeClaims from Kubernetes, so a controller-runtime fake client stands in for the apiserver here;
// test/azurestack runs the whole stack against a real one.
func newHarness(t *testing.T, spec azv1beta1.AKSNodeClassSpec, options ...func(*azureprovider.Options)) *harness {
	t.Helper()
	f := fake.New()
	t.Cleanup(f.Close)
	scheme := runtime.NewScheme()
	_ = azv1beta1.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	nc := &azv1beta1.AKSNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1}, Spec: spec}
	kube := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).WithStatusSubresource(nc).Build()
	clients, err := azureprovider.NewClients(azureprovider.ClientOptions{
		SubscriptionID: fake.Subscription, Endpoint: f.URL(), PricesEndpoint: f.URL(), Credential: fake.Credential(),
		Retry: policy.RetryOptions{RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := azureprovider.Options{
		ClusterName: "prod", Location: fake.Location, ResourceGroup: fake.ResourceGroup, SubnetID: fake.SubnetID,
		ClusterEndpoint: "https://prod-dns-1234.hcp.eastus.azmk8s.io:443", ClusterCABundle: base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")),
		KubeletBootstrapToken: "abcdef.0123456789abcdef", ClusterDNS: "10.0.0.10", SSHPublicKey: "ssh-rsa AAAA joist", PollFrequency: 10 * time.Millisecond,
	}
	for _, o := range options {
		o(&opts)
	}
	p := azureprovider.New(kube, clients, cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0), clock.RealClock{}, opts)
	ctrl := aksnodeclass.New(kube, clients.Images, clients.Subnets, aksnodeclass.Options{Location: fake.Location, DefaultSubnetID: fake.SubnetID,
		KubernetesVersion: func(context.Context) (string, error) { return "1.33.2", nil }})
	if _, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	return &harness{fake: f, kube: kube, provider: p, clients: clients}
}

func claim(name string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.azure.com", Kind: "AKSNodeClass", Name: "default"},
			Requirements: reqs,
		},
	}
}

func req(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func TestNodeClassResolves(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{ImageFamily: to.Ptr("AzureLinux")})
	nc := &azv1beta1.AKSNodeClass{}
	if err := h.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	if !nc.IsTrue(azv1beta1.ConditionTypeReady) {
		t.Fatalf("not Ready: %+v", nc.Status.Conditions)
	}
	want := "/CommunityGalleries/" + aksnodeclass.AzureLinuxGallery + "/images/V3gen2/versions/" + fake.ImageVersion
	if len(nc.Status.Images) != 3 || nc.Status.Images[0].ID != want || *nc.Status.KubernetesVersion != "1.33.2" {
		t.Fatalf("images %+v version %v, want %s first", nc.Status.Images, nc.Status.KubernetesVersion, want)
	}
}

func TestUnknownSubnetIsNotReady(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{VNETSubnetID: to.Ptr("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/missing")})
	nc := &azv1beta1.AKSNodeClass{}
	_ = h.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, nc)
	c := nc.GetCondition(azv1beta1.ConditionTypeReady)
	if c.Status != metav1.ConditionFalse || c.Reason != "SubnetNotFound" || !strings.Contains(c.Message, "subnets/missing") {
		t.Fatalf("Ready = %+v, want False naming the subnet", c)
	}
}

func TestCreateLaunchesOneSpotVMPerClaimAndIsIdempotent(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{Tags: map[string]string{"team/name": "platform"}})
	ctx := context.Background()
	if err := h.provider.Prices().Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h.fake.ThrottleNext(2) // ARM throttles: the SDK retries after Retry-After
	c := claim("general-abc12", req(v1.CapacityTypeLabelKey, "spot", "on-demand"), req("karpenter.azure.com/sku-family", "D"), req("kubernetes.io/arch", "amd64"))
	got, err := h.provider.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	vms := h.fake.VMs()
	vm := vms["aks-general-abc12"]
	if len(vms) != 1 || vm == nil {
		t.Fatalf("VMs %v, want aks-general-abc12", vms)
	}
	if p := vm.Properties; *p.Priority != armcompute.VirtualMachinePriorityTypesSpot || *p.EvictionPolicy != armcompute.VirtualMachineEvictionPolicyTypesDelete {
		t.Errorf("priority %v eviction %v, want Spot / Delete", *p.Priority, p.EvictionPolicy)
	}
	for k, v := range map[string]string{"karpenter.azure.com_cluster": "prod", "karpenter.sh_nodepool": "general", "karpenter.azure.com_nodeclaim": "general-abc12", "team_name": "platform", "compute.aks.billing": "linux"} {
		if deref(vm.Tags[k]) != v {
			t.Errorf("tag %s = %q, want %q", k, deref(vm.Tags[k]), v)
		}
	}
	wantID := "azure:///subscriptions/" + fake.Subscription + "/resourceGroups/" + fake.ResourceGroup + "/providers/Microsoft.Compute/virtualMachines/aks-general-abc12"
	if got.Status.ProviderID != wantID || got.Labels[v1.CapacityTypeLabelKey] != "spot" || got.Labels["kubernetes.azure.com/scalesetpriority"] != "spot" ||
		!strings.HasPrefix(got.Labels[v1.LabelInstanceType], "Standard_D") || got.Annotations[azv1beta1.AnnotationAKSNodeClassHash] == "" {
		t.Errorf("launched claim: providerID %s labels %v", got.Status.ProviderID, got.Labels)
	}
	if len(h.fake.Calls("PUT", "/virtualMachines/")) != 1 || countStatus(h.fake, 429) != 2 {
		t.Errorf("VM PUTs %d, throttled %d; want 1 and 2", len(h.fake.Calls("PUT", "/virtualMachines/")), countStatus(h.fake, 429))
	}
	// A retry (or a restarted controller) finds the VM by its name and launches nothing.
	again, err := h.provider.Create(ctx, c)
	if err != nil || again.Status.ProviderID != wantID || len(h.fake.Calls("PUT", "/virtualMachines/")) != 1 {
		t.Fatalf("second Create: %v, %s, %d PUTs", err, again.Status.ProviderID, len(h.fake.Calls("PUT", "/virtualMachines/")))
	}
	listed, err := h.provider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].Name != "general-abc12" || listed[0].Status.ProviderID != wantID {
		t.Fatalf("List = %+v, %v", listed, err)
	}
	if _, err := h.provider.Get(ctx, wantID); err != nil {
		t.Fatal(err)
	}
	// Spot eviction (policy Delete) removes the VM: Get reports it gone.
	if err := h.fake.EvictSpot("aks-general-abc12"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.provider.Get(ctx, wantID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after eviction = %v, want NotFound", err)
	}
	if nics := h.fake.NICs(); len(nics) != 0 {
		t.Errorf("NICs %v survive the eviction", nics)
	}
}

func countStatus(f *fake.Server, status int) int {
	n := 0
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		for _, c := range f.Calls(m, "/") {
			if c.Status == status {
				n++
			}
		}
	}
	return n
}

func TestCapacityErrorsMarkOfferingsAndCleanUp(t *testing.T) {
	for _, tc := range []struct {
		failure fake.Failure
		// marked offerings of the failed size: zones × capacity types
		wantMarks int
		spotAll   bool
	}{
		{failure: fake.Failure{Code: "SkuNotAvailable", Message: "The requested VM size is not available"}, wantMarks: 1},
		{failure: fake.Failure{Code: "AllocationFailed", Message: "Allocation failed.", Async: true}, wantMarks: 6},
		{failure: fake.Failure{Code: "ZonalAllocationFailed", Message: "Allocation failed in zone.", Async: true}, wantMarks: 2},
		{failure: fake.Failure{Code: "OperationNotAllowed", Message: "Operation could not be completed as it results in exceeding approved LowPriorityCores quota."}, spotAll: true},
	} {
		t.Run(tc.failure.Code, func(t *testing.T) {
			h := newHarness(t, azv1beta1.AKSNodeClassSpec{})
			ctx := context.Background()
			h.fake.FailNextCreate(tc.failure)
			_, err := h.provider.Create(ctx, claim("c1", req(v1.CapacityTypeLabelKey, "spot"), req("karpenter.azure.com/sku-family", "D")))
			var ice *cloudprovider.InsufficientCapacityError
			if !errors.As(err, &ice) || !strings.Contains(err.Error(), tc.failure.Code) {
				t.Fatalf("Create = %v, want an InsufficientCapacityError naming %s", err, tc.failure.Code)
			}
			if tc.spotAll {
				for _, o := range ice.Offerings {
					if o.CapacityType != "spot" {
						t.Errorf("quota error marked %+v", o)
					}
				}
				if len(ice.Offerings) < 10 {
					t.Errorf("LowPriorityCores quota marked %d offerings, want every spot offering", len(ice.Offerings))
				}
			} else if len(ice.Offerings) != tc.wantMarks {
				t.Errorf("marked %+v, want %d offerings of the size", ice.Offerings, tc.wantMarks)
			}
			for _, o := range ice.Offerings {
				if !h.provider.UnavailableOfferings().IsUnavailable(o) {
					t.Errorf("%+v not in the unavailable cache", o)
				}
			}
			if len(h.fake.VMs()) != 0 || len(h.fake.NICs()) != 0 {
				t.Errorf("left VMs %v NICs %v after a failed launch", h.fake.VMs(), h.fake.NICs())
			}
			// The next launch takes another offering.
			got, err := h.provider.Create(ctx, claim("c1", req(v1.CapacityTypeLabelKey, "spot", "on-demand"), req("karpenter.azure.com/sku-family", "D")))
			if err != nil {
				t.Fatal(err)
			}
			if first := ice.Offerings[0]; got.Labels[v1.LabelInstanceType] == first.InstanceType && got.Labels[v1.LabelTopologyZone] == first.Zone && got.Labels[v1.CapacityTypeLabelKey] == first.CapacityType {
				t.Errorf("relaunched into the failed offering %+v", first)
			}
		})
	}
}

func TestDeleteRemovesVMAndNICAndGCCollectsOrphanNICs(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{})
	ctx := context.Background()
	c := claim("d1", req(v1.CapacityTypeLabelKey, "on-demand"))
	launched, err := h.provider.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.kube.Create(ctx, launched.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	h.fake.AddNIC("aks-orphan", map[string]string{"karpenter.azure.com_cluster": "prod"})
	h.fake.AddNIC("someone-elses", map[string]string{"karpenter.azure.com_cluster": "other"})
	if n, err := h.provider.CollectNICs(ctx); err != nil || n != 1 {
		t.Fatalf("CollectNICs = %d, %v; want the orphan only", n, err)
	}
	if nics := strings.Join(h.fake.NICs(), ","); nics != "aks-d1,someone-elses" {
		t.Fatalf("NICs %s, want the claim's and the other cluster's kept", nics)
	}
	if err := h.provider.Delete(ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NotFound once gone", err)
	}
	if len(h.fake.VMs()) != 0 || strings.Join(h.fake.NICs(), ",") != "someone-elses" {
		t.Errorf("after Delete VMs %v NICs %v", h.fake.VMs(), h.fake.NICs())
	}
}

func TestDrift(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{})
	ctx := context.Background()
	launched, err := h.provider.Create(ctx, claim("x1", req(v1.CapacityTypeLabelKey, "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := h.provider.IsDrifted(ctx, launched); err != nil || r != "" {
		t.Fatalf("fresh claim drifted: %q %v", r, err)
	}
	h.fake.SetImageVersion("202512.01.0")
	ctrl := aksnodeclass.New(h.kube, h.clients.Images, h.clients.Subnets, aksnodeclass.Options{Location: fake.Location, DefaultSubnetID: fake.SubnetID,
		KubernetesVersion: func(context.Context) (string, error) { return "1.33.2", nil }})
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.provider.IsDrifted(ctx, launched); r != azureprovider.DriftImageVersion {
		t.Errorf("after a new node image, drift = %q, want %s", r, azureprovider.DriftImageVersion)
	}
	nc := &azv1beta1.AKSNodeClass{}
	_ = h.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc)
	nc.Spec.OSDiskSizeGB = to.Ptr[int32](64)
	_ = h.kube.Update(ctx, nc)
	if r, _ := h.provider.IsDrifted(ctx, launched); r != azureprovider.DriftNodeClassHash {
		t.Errorf("after an osDiskSizeGB change, drift = %q, want %s", r, azureprovider.DriftNodeClassHash)
	}
}

func TestCustomDataJoinsTheCluster(t *testing.T) {
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{Kubelet: &azv1beta1.KubeletConfiguration{ContainerLogMaxFiles: to.Ptr[int32](3)}})
	ctx := context.Background()
	if _, err := h.provider.Create(ctx, claim("b1", req(v1.CapacityTypeLabelKey, "on-demand"), req(v1.LabelInstanceType, "Standard_D4s_v3"))); err != nil {
		t.Fatal(err)
	}
	data, err := base64.StdEncoding.DecodeString(h.fake.LastCustomData())
	if err != nil || !strings.HasPrefix(string(data), "#cloud-config\n") {
		t.Fatalf("custom data %q: %v", data, err)
	}
	var cfg struct {
		WriteFiles []struct{ Path, Permissions, Content string } `json:"write_files"`
		RunCmd     [][]string                                    `json:"runcmd"`
	}
	if err := yaml.UnmarshalStrict(data[len("#cloud-config\n"):], &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.RunCmd) == 0 || strings.Join(cfg.RunCmd[len(cfg.RunCmd)-1], " ") != "systemctl enable --now kubelet" {
		t.Errorf("runcmd %v does not start the kubelet", cfg.RunCmd)
	}
	files := map[string]string{}
	for _, f := range cfg.WriteFiles {
		files[f.Path] = f.Content
	}
	kc, err := clientcmd.Load([]byte(files["/var/lib/kubelet/bootstrap-kubeconfig"]))
	if err != nil {
		t.Fatal(err)
	}
	if ctxt := kc.Contexts[kc.CurrentContext]; kc.Clusters[ctxt.Cluster].Server != "https://prod-dns-1234.hcp.eastus.azmk8s.io:443" || kc.AuthInfos[ctxt.AuthInfo].Token != "abcdef.0123456789abcdef" {
		t.Errorf("bootstrap kubeconfig %+v", kc)
	}
	defaults := files["/etc/default/kubelet"]
	// Standard_D4s_v3: kube-reserved 140m / 2662Mi, the 750Mi threshold, 250 pods (Azure CNI Overlay).
	for _, want := range []string{"--kube-reserved=cpu=140m,memory=2662Mi", "--eviction-hard=memory.available<750Mi", "--max-pods=250",
		"--provider-id=azure:///subscriptions/" + fake.Subscription, "--container-log-max-files=3", "kubernetes.azure.com/sku-cpu=4"} {
		if !strings.Contains(defaults, want) {
			t.Errorf("/etc/default/kubelet lacks %q:\n%s", want, defaults)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
