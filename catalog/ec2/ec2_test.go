package ec2_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog/ec2"
)

func ptr[T any](v T) *T { return &v }

// TestAllocatableByHand checks the allocatable of real types against arithmetic done by hand:
//
//	memory = MiB (−64 on Graviton) − ceil(7.5%) − (11·pods + 255) − 100 (eviction)
//	cpu    = vCPU − (6% of core 1 + 1% of core 2 + 0.5% of cores 3–4 + 0.25% of the rest)
//	pods   = ENIs·(IPv4 per ENI − 1) + 2
//	disk   = 20Gi − 1Gi − 10%
func TestAllocatableByHand(t *testing.T) {
	for _, tc := range []struct {
		name, cpu, memory, pods string
		settings                func(*ec2.Settings)
	}{
		// 8192 − 615 = 7577; pods 3·9+2 = 29; 7577 − 574 − 100 = 6903. cpu 2000 − 60 − 10.
		{name: "m5.large", cpu: "1930m", memory: "6903Mi", pods: "29"},
		// Graviton: 4096 − 64 = 4032; − ceil(302.4) = 3729; − 574 − 100 = 3055.
		{name: "a1.large", cpu: "1930m", memory: "3055Mi", pods: "29"},
		// 32768 − 2458 = 30310; pods 8·29+2 = 234; − (2574+255) − 100 = 27381. cpu 16000 − 60−10−10−30.
		{name: "c5.4xlarge", cpu: "15890m", memory: "27381Mi", pods: "234"},
		// 16384 − 1229 = 15155; − 574 − 100 = 14481; cpu 4000 − 80.
		{name: "g4dn.xlarge", cpu: "3920m", memory: "14481Mi", pods: "29"},
		// maxPods 110 on m5.large: kube-reserved memory 11·110+255 = 1465; 7577 − 1465 − 100 = 6012.
		{name: "m5.large", cpu: "1930m", memory: "6012Mi", pods: "110", settings: func(s *ec2.Settings) { s.MaxPods = ptr[int32](110) }},
		// podsPerCore 4 on c5.4xlarge: min(234, 64) = 64; 30310 − (704+255) − 100 = 29251.
		{name: "c5.4xlarge", cpu: "15890m", memory: "29251Mi", pods: "64", settings: func(s *ec2.Settings) { s.PodsPerCore = ptr[int32](4) }},
		// evictionHard memory.available 10% of 7577Mi (7945060352 bytes) = 794506036; kubeReserved memory 1Gi;
		// systemReserved cpu 100m: 7945060352 − 1073741824 − 794506036 = 6076812492.
		{name: "m5.large", cpu: "1830m", memory: "6076812492", pods: "29", settings: func(s *ec2.Settings) {
			s.EvictionHard = map[string]string{"memory.available": "10%"}
			s.KubeReserved = map[string]string{"memory": "1Gi"}
			s.SystemReserved = map[string]string{"cpu": "100m"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := ec2.Lookup(tc.name)
			if info == nil {
				t.Fatalf("%s is not in the embedded data", tc.name)
			}
			s := ec2.DefaultSettings()
			if tc.settings != nil {
				tc.settings(&s)
			}
			it, err := ec2.Build(info, s)
			if err != nil {
				t.Fatal(err)
			}
			got := it.Allocatable()
			for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memory, corev1.ResourcePods: tc.pods, corev1.ResourceEphemeralStorage: "17Gi"} {
				g := got[name]
				if g.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("allocatable %s = %s, want %s", name, g.String(), want)
				}
			}
		})
	}
}

func TestBadKubeletSettingNamesTheField(t *testing.T) {
	s := ec2.DefaultSettings()
	s.EvictionHard = map[string]string{"memory.available": "lots"}
	if _, err := ec2.Build(ec2.Lookup("m5.large"), s); err == nil || !strings.Contains(err.Error(), "evictionHard[memory.available]") {
		t.Fatalf("error = %v, want one naming evictionHard[memory.available]", err)
	}
}

func TestBenchmarkCatalog(t *testing.T) {
	its, err := ec2.InstanceTypes(ec2.Options{SpotPriceFactor: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if len(its) < 500 {
		t.Fatalf("got %d instance types, want the whole EC2 range (>500)", len(its))
	}
	data := ec2.Embedded()
	if data.PricesDate.IsZero() || data.PricesRegion == "" {
		t.Fatalf("prices carry no date/region: %+v", data.PricesDate)
	}
	var m5 bool
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		m5 = true
		if len(it.Offerings) != 6 {
			t.Fatalf("m5.large offerings = %d, want 3 zones × (on-demand, spot)", len(it.Offerings))
		}
		od := it.Offerings[0]
		if od.CapacityType != "on-demand" || od.Price != 0.096 {
			t.Errorf("m5.large on-demand offering = %+v, want the us-east-1 price 0.096", od)
		}
		if it.Labels["karpenter.k8s.aws/instance-family"] != "m5" || it.Labels["karpenter.k8s.aws/instance-category"] != "m" ||
			it.Labels["kubernetes.io/arch"] != "amd64" || it.Labels["karpenter.k8s.aws/instance-generation"] != "5" {
			t.Errorf("m5.large labels = %v", it.Labels)
		}
	}
	if !m5 {
		t.Fatal("m5.large missing")
	}
}

// BenchmarkInstanceTypes measures building the whole catalog (1,345 priced types × 3 zones × 2
// capacity types) with the allocatable math: what the AWS provider does per NodePool and round.
func BenchmarkInstanceTypes(b *testing.B) {
	for b.Loop() {
		if its, err := ec2.InstanceTypes(ec2.Options{SpotPriceFactor: 0.4}); err != nil || len(its) == 0 {
			b.Fatal("empty catalog")
		}
	}
}
