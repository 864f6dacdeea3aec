package azure_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog/azure"
)

// TestKubeReservedPublishedExamples are the AKS provider's own published tax examples.
func TestKubeReservedPublishedExamples(t *testing.T) {
	for _, tc := range []struct {
		cpus        int64
		memGiB      float64
		cpu, memory string
	}{
		{4, 7, "140m", "1638Mi"},
		{2, 8, "100m", "1843Mi"},
		{3, 64, "120m", "5611Mi"},
	} {
		got := azure.KubeReserved(tc.cpus, tc.memGiB)
		if c, m := got[corev1.ResourceCPU], got[corev1.ResourceMemory]; c.String() != tc.cpu || m.String() != tc.memory {
			t.Errorf("KubeReserved(%d, %v) = %s/%s, want %s/%s", tc.cpus, tc.memGiB, c.String(), m.String(), tc.cpu, tc.memory)
		}
	}
}

// TestAllocatableByHand checks real SKUs against arithmetic done by hand:
//
//	memory = whole GiB − ceil(7.5%) − kube-reserved (25/20/10/6/2 % brackets) − 750Mi eviction
//	cpu    = vCPUs − (60m + 40m + 20m·2 + 10m per core beyond 4)
//	pods   = 250 (Azure CNI Overlay), ephemeral storage = 128G (the OS disk, in GB)
func TestAllocatableByHand(t *testing.T) {
	for _, tc := range []struct {
		name, cpu, memory, gpu string
	}{
		// 8Gi − 644245095 = 7945689497; − 1843Mi − 750Mi = 5226731929. cpu 2000 − 100.
		{name: "Standard_D2s_v3", cpu: "1900m", memory: "5226731929"},
		// 16Gi − 1288490189 = 15891378995; reserved 1 + 0.8 + 0.8 GiB = 2662Mi; − 750Mi = 12313637683.
		{name: "Standard_D4s_v3", cpu: "3860m", memory: "12313637683"},
		// 220Gi − 17716740096 = 218506461184; reserved 1 + .8 + .8 + 6.72 + 1.84 = 11.16 GiB = 11427Mi;
		// − 750Mi = 205737951232. cpu 24000 − (60+40+40+200).
		{name: "Standard_NC24ads_A100_v4", cpu: "23660m", memory: "205737951232", gpu: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sku := azure.Lookup(tc.name)
			if sku == nil {
				t.Fatalf("%s is not in the embedded data", tc.name)
			}
			got := azure.Build(sku, azure.DefaultSettings()).Allocatable()
			want := map[corev1.ResourceName]string{corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memory, corev1.ResourcePods: "250", corev1.ResourceEphemeralStorage: "128G"}
			if tc.gpu != "" {
				want["nvidia.com/gpu"] = tc.gpu
			}
			for name, w := range want {
				g := got[name]
				if g.Cmp(resource.MustParse(w)) != 0 {
					t.Errorf("allocatable %s = %s, want %s", name, g.String(), w)
				}
			}
		})
	}
}

// TestEverySKUMatchesAKSFormulas recomputes every embedded SKU's allocatable and max pods in
// integer arithmetic (brackets in MiB and millicores) and compares them with the catalog's
// floating-point math, for each network plugin's max-pods default.
func TestEverySKUMatchesAKSFormulas(t *testing.T) {
	skus := azure.Embedded().SKUs
	if len(skus) < 15 {
		t.Fatalf("only %d SKUs embedded", len(skus))
	}
	for _, plugin := range []struct {
		name, mode string
		pods       int64
	}{{"azure", "overlay", 250}, {"none", "", 250}, {"azure", "", 30}, {"kubenet", "", 110}} {
		st := azure.DefaultSettings()
		st.MaxPods = azure.DefaultMaxPods(plugin.name, plugin.mode)
		for _, sku := range skus {
			it := azure.Build(sku, st)
			alloc := it.Allocatable()
			memMiB := int64(sku.MemoryGiB() * 1024)
			capBytes := (memMiB / 1024) * (1 << 30)
			capBytes -= (capBytes*75 + 999) / 1000
			wantMem := capBytes - (reservedMemoryMiB(memMiB)+750)*(1<<20)
			wantCPU := sku.VCPU()*1000 - reservedMilliCPU(sku.VCPU())
			if got := alloc[corev1.ResourceMemory]; got.Value() != wantMem {
				t.Errorf("%s: allocatable memory %d, want %d", sku.Name, got.Value(), wantMem)
			}
			if got := alloc[corev1.ResourceCPU]; got.MilliValue() != wantCPU {
				t.Errorf("%s: allocatable cpu %dm, want %dm", sku.Name, got.MilliValue(), wantCPU)
			}
			if got := alloc[corev1.ResourcePods]; got.Value() != plugin.pods {
				t.Errorf("%s with %s/%s: max pods %d, want %d", sku.Name, plugin.name, plugin.mode, got.Value(), plugin.pods)
			}
		}
	}
}

// reservedMemoryMiB: 25% of the first 4096 MiB, 20% of the next 4096, 10% of the next 8192, 6% up
// to 131072 MiB, 2% above; rounded down to whole MiB.
func reservedMemoryMiB(mib int64) int64 {
	var hundredths, lower int64
	for _, b := range []struct{ upper, pct int64 }{{4096, 25}, {8192, 20}, {16384, 10}, {131072, 6}, {1 << 62, 2}} {
		if mib <= lower {
			break
		}
		hundredths += (min(mib, b.upper) - lower) * b.pct
		lower = b.upper
	}
	return hundredths / 100
}

func reservedMilliCPU(cores int64) int64 {
	var milli int64
	for c := int64(1); c <= cores; c++ {
		switch {
		case c == 1:
			milli += 60
		case c == 2:
			milli += 40
		case c <= 4:
			milli += 20
		default:
			milli += 10
		}
	}
	return milli
}

func TestLabels(t *testing.T) {
	for name, want := range map[string]map[string]string{
		"Standard_NC24ads_A100_v4": {
			"karpenter.azure.com/sku-family": "N", "karpenter.azure.com/sku-series": "NCads_v4", "karpenter.azure.com/sku-version": "4",
			"karpenter.azure.com/sku-gpu-name": "A100", "karpenter.azure.com/sku-gpu-manufacturer": "nvidia", "karpenter.azure.com/sku-gpu-count": "1",
			"karpenter.azure.com/sku-cpu": "24", "karpenter.azure.com/sku-memory": "225280", "kubernetes.azure.com/sku-memory": "225280",
			"karpenter.azure.com/sku-networking-accelerated": "true", "karpenter.azure.com/sku-storage-premium-capable": "true",
			// NVMe is not among its ephemeral OS placements: the 274877906944-byte cache disk.
			"karpenter.azure.com/sku-storage-ephemeralos-maxsize": "274", "karpenter.azure.com/sku-hyperv-generation": "2",
			"kubernetes.io/arch": "amd64", "kubernetes.azure.com/os-sku": "Ubuntu",
		},
		"Standard_D16plds_v5": {
			"karpenter.azure.com/sku-family": "D", "karpenter.azure.com/sku-series": "Dplds_v5", "karpenter.azure.com/sku-version": "5",
			"kubernetes.io/arch": "arm64", "karpenter.azure.com/sku-gpu-count": "0", "karpenter.azure.com/sku-storage-ephemeralos-maxsize": "429",
		},
		// 7208960 MiB of NVMe where ephemeral OS disks may go: 7559142440960 bytes.
		"Standard_D128ds_v6": {"karpenter.azure.com/sku-storage-ephemeralos-maxsize": "7559", "karpenter.azure.com/sku-series": "Dds_v6"},
		"Standard_B20ms":     {"karpenter.azure.com/sku-series": "Bms", "karpenter.azure.com/sku-version": "1"},
		"Standard_DS2_v2":    {"karpenter.azure.com/sku-series": "DS_v2", "karpenter.azure.com/sku-family": "D"},
	} {
		labels := azure.Build(azure.Lookup(name), azure.DefaultSettings()).Labels
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", name, k, labels[k], v)
			}
		}
		if _, ok := labels["karpenter.azure.com/sku-gpu-name"]; ok && want["karpenter.azure.com/sku-gpu-name"] == "" {
			t.Errorf("%s: gpu-name set on a size without GPUs", name)
		}
	}
}

func TestCatalogKeepsWhatAKSRuns(t *testing.T) {
	its := azure.InstanceTypes(azure.Options{SpotPriceFactor: 0.3})
	names := map[string]bool{}
	for _, it := range its {
		names[it.Name] = true
	}
	for _, gone := range []string{"Standard_A0", "Standard_B1s", "Standard_M8-2ms", "Standard_DC8s_v3"} {
		if names[gone] {
			t.Errorf("%s offered; AKS cannot run it (%s)", gone, azure.Unsupported(azure.Lookup(gone)))
		}
	}
	if !names["Standard_D2s_v3"] || !names["Standard_NC24ads_A100_v4"] {
		t.Fatalf("catalog %v misses supported sizes", names)
	}
	for _, it := range its {
		if it.Name != "Standard_D2s_v3" {
			continue
		}
		if len(it.Offerings) != 6 || it.Offerings[0].Zone != "eastus-1" || it.Offerings[0].Price != 0.096 || it.Offerings[1].CapacityType != "spot" {
			t.Errorf("D2s_v3 offerings = %+v, want eastus-1..3 on-demand at 0.096 and spot", it.Offerings)
		}
	}
	d := azure.Embedded()
	if d.PricesDate.IsZero() || d.SKUsDate.IsZero() {
		t.Error("embedded data carries no dates")
	}
}

func TestParseSize(t *testing.T) {
	for name, want := range map[string]string{
		"Standard_D4s_v5": "D||4||s||v5", "Standard_NC24ads_A100_v4": "N|C|24||ads|A100|v4", "Standard_M8-2ms": "M||8|2|ms||",
		"Standard_D2_v2": "D||2||||v2", "Standard_E64i_v3": "E||64||i||v3", "Standard_NC16as_T4_v3": "N|C|16||as|T4|v3",
	} {
		s, ok := azure.ParseSize(name)
		got := s.Family + "|" + s.Subfamily + "|" + s.CPUs + "|" + s.Constrained + "|" + s.Features + "|" + s.Accelerator + "|" + s.Version
		if !ok || got != want {
			t.Errorf("ParseSize(%s) = %s (%v), want %s", name, got, ok, want)
		}
	}
}
