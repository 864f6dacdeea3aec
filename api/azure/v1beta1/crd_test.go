package v1beta1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	"github.com/joist-dev/joist/test/env"
)

func docs(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(data, "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("parsing yaml: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

const base = `
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata: {name: test}
spec:
  imageFamily: Ubuntu2204
`

func TestAKSNodeClassCRD(t *testing.T) {
	scheme := env.DefaultScheme()
	_ = azv1beta1.AddToScheme(scheme)
	e := env.New(t, env.Options{Scheme: scheme})
	ctx := context.Background()

	t.Run("examples in the AKS provider's shape apply unchanged", func(t *testing.T) {
		files, err := filepath.Glob("testdata/*.yaml")
		if err != nil || len(files) < 3 {
			t.Fatalf("examples: %v, %v", files, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs := docs(t, string(data))
			for _, u := range objs {
				if err := e.Client.Create(ctx, u); err != nil {
					t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
				}
			}
			for _, u := range objs {
				_ = e.Client.Delete(ctx, u)
			}
		}
	})

	t.Run("defaults as the AKS provider's CRD", func(t *testing.T) {
		u := docs(t, `
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata: {name: defaults}
spec:
  kubelet: {}
  gpu: {}
`)[0]
		if err := e.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		nc := &azv1beta1.AKSNodeClass{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "defaults"}, nc); err != nil {
			t.Fatal(err)
		}
		s := nc.Spec
		if *s.ImageFamily != "Ubuntu" || *s.OSDiskSizeGB != 128 || *s.GPU.Mode != azv1beta1.GPUModeDriver {
			t.Errorf("imageFamily %v osDiskSizeGB %v gpu.mode %v, want Ubuntu, 128, Driver", *s.ImageFamily, *s.OSDiskSizeGB, *s.GPU.Mode)
		}
		k := s.Kubelet
		if *k.CPUManagerPolicy != "none" || !*k.CPUCFSQuota || k.CPUCFSQuotaPeriod.Duration.String() != "100ms" ||
			*k.TopologyManagerPolicy != "none" || *k.ContainerLogMaxSize != "50Mi" || *k.ContainerLogMaxFiles != 5 {
			t.Errorf("kubelet defaults = %+v", k)
		}
		if s.MaxPods != nil || s.VNETSubnetID != nil {
			t.Errorf("maxPods/vnetSubnetID defaulted: %v %v", s.MaxPods, s.VNETSubnetID)
		}
	})

	for _, tc := range []struct {
		name, patch, want string
	}{
		{"small os disk", `{"spec":{"osDiskSizeGB":20}}`, "spec.osDiskSizeGB: Invalid value: 20: spec.osDiskSizeGB in body should be greater than or equal to 30"},
		{"huge os disk", `{"spec":{"osDiskSizeGB":4096}}`, "less than or equal to 2048"},
		{"unknown image family", `{"spec":{"imageFamily":"Windows2022"}}`, "Unsupported value: \"Windows2022\""},
		{"max pods too low", `{"spec":{"maxPods":5}}`, "spec.maxPods in body should be greater than or equal to 10"},
		{"max pods too high", `{"spec":{"maxPods":251}}`, "less than or equal to 250"},
		{"subnet that is a vnet", `{"spec":{"vnetSubnetID":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"}}`, "spec.vnetSubnetID in body should match"},
		{"FIPS on Ubuntu2404", `{"spec":{"imageFamily":"Ubuntu2404","fipsMode":"FIPS"}}`, "FIPS is not yet supported for Ubuntu2404"},
		{"FIPS on Ubuntu2204 without trusted launch", `{"spec":{"fipsMode":"FIPS"}}`, "TrustedLaunch is required for FIPS support with Ubuntu2204"},
		{"FIPS trusted launch on AzureLinux", `{"spec":{"imageFamily":"AzureLinux","fipsMode":"FIPS","security":{"trustedLaunch":{"vtpm":true}}}}`, "TrustedLaunch with FIPSMode FIPS is only supported for Ubuntu and Ubuntu2204"},
		{"swap without failSwapOn false", `{"spec":{"linuxOSConfig":{"swapFileSize":"2Gi"}}}`, "kubelet.failSwapOn must be set to false"},
		{"tag key with <", `{"spec":{"tags":{"a<b":"c"}}}`, "tags keys must not contain '<', '>', '%', '&', or '?'"},
		{"tag key with backslash", `{"spec":{"tags":{"a\\b":"c"}}}`, "tags keys must not contain '\\'"},
		{"long tag value", `{"spec":{"tags":{"a":"` + strings.Repeat("v", 257) + `"}}}`, "tags values must be less than 256 characters"},
		{"image GC thresholds", `{"spec":{"kubelet":{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":60}}}`, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"},
		{"bad cpu manager policy", `{"spec":{"kubelet":{"cpuManagerPolicy":"dynamic"}}}`, "Unsupported value: \"dynamic\""},
		{"one log file", `{"spec":{"kubelet":{"containerLogMaxFiles":1}}}`, "greater than or equal to 2"},
		{"rmem default above max", `{"spec":{"linuxOSConfig":{"sysctls":{"netCoreRmemDefault":300000,"netCoreRmemMax":212992}}}}`, "netCoreRmemDefault must be <= netCoreRmemMax"},
		{"port range", `{"spec":{"linuxOSConfig":{"sysctls":{"netIPv4IPLocalPortRange":"80 60000"}}}}`, "netIPv4IPLocalPortRange first port must be in [1024, 60999]"},
		{"swappiness", `{"spec":{"linuxOSConfig":{"sysctls":{"vmSwappiness":101}}}}`, "less than or equal to 100"},
		{"local DNS without root zone", `{"spec":{"localDNS":{"mode":"Required","vnetDNSOverrides":[{"zone":"cluster.local","queryLogging":"Error","protocol":"PreferUDP","forwardDestination":"ClusterCoreDNS","forwardPolicy":"Random","maxConcurrent":10,"cacheDuration":"1h","serveStaleDuration":"1h","serveStale":"Verify"}],"kubeDNSOverrides":[]}}}`, "must contain required zones '.' and 'cluster.local'"},
		{"cluster.local to VnetDNS", `{"spec":{"localDNS":{"mode":"Required","vnetDNSOverrides":[],"kubeDNSOverrides":[{"zone":"cluster.local","queryLogging":"Error","protocol":"PreferUDP","forwardDestination":"VnetDNS","forwardPolicy":"Random","maxConcurrent":10,"cacheDuration":"1h","serveStaleDuration":"1h","serveStale":"Verify"}]}}}`, "'cluster.local' cannot be forwarded to VnetDNS"},
		{"bad cache duration", `{"spec":{"localDNS":{"mode":"Required","vnetDNSOverrides":[],"kubeDNSOverrides":[{"zone":".","queryLogging":"Error","protocol":"PreferUDP","forwardDestination":"ClusterCoreDNS","forwardPolicy":"Random","maxConcurrent":10,"cacheDuration":"Never","serveStaleDuration":"1h","serveStale":"Verify"}]}}}`, "cacheDuration in body should match"},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			u := docs(t, base)[0]
			u.SetName(strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"))
			u.SetName(strings.NewReplacer("<", "", "\\", "").Replace(u.GetName()))
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatal(err)
			}
			merge(u.Object, patch)
			err := e.Client.Create(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create = %v, want a rejection containing %q", err, tc.want)
			}
		})
	}
}

// merge overlays patch on obj (maps merge, everything else replaces).
func merge(obj, patch map[string]any) {
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			if om, ok := obj[k].(map[string]any); ok {
				merge(om, pm)
				continue
			}
		}
		obj[k] = v
	}
}
