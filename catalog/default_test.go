package catalog

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func onDemandPrice(t *testing.T, it *InstanceType, zone string) float64 {
	t.Helper()
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == v1.CapacityTypeOnDemand {
			return o.Price
		}
	}
	t.Fatalf("%s has no on-demand offering in %s", it.Name, zone)
	return 0
}

func TestDefaultCatalogInvariants(t *testing.T) {
	its := Default()
	if n := len(its); n < 50 || n > 300 {
		t.Errorf("default catalog has %d instance types, want between 50 and 300", n)
	}
	byName := map[string]*InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}

	t.Run("families, sizes and memory ratios", func(t *testing.T) {
		for _, f := range []struct {
			family    string
			gibPerCPU int64
		}{{"c", 2}, {"m", 4}, {"r", 8}} {
			for _, arch := range []string{"amd64", "arm64"} {
				for _, cpus := range []int64{1, 2, 4, 8, 16, 32, 64, 96} {
					name := fmt.Sprintf("%s-%dx-%s-linux", f.family, cpus, arch)
					it, ok := byName[name]
					if !ok {
						t.Errorf("missing %s", name)
						continue
					}
					cpu, mem := it.Capacity[corev1.ResourceCPU], it.Capacity[corev1.ResourceMemory]
					if cpu.Value() != cpus || mem.Value() != cpus*f.gibPerCPU<<30 {
						t.Errorf("%s capacity cpu=%s memory=%s, want %d and %dGi", name, cpu.String(), mem.String(), cpus, cpus*f.gibPerCPU)
					}
					if it.Labels[v1.LabelArch] != arch || it.Labels[LabelInstanceFamily] != f.family || it.Labels[LabelInstanceCPU] != strconv.FormatInt(cpus, 10) {
						t.Errorf("%s labels = %v", name, it.Labels)
					}
				}
			}
		}
	})

	t.Run("arm64 is cheaper than amd64", func(t *testing.T) {
		pairs := 0
		for _, it := range its {
			if it.Labels[v1.LabelArch] != "amd64" {
				continue
			}
			arm, ok := byName[it.Labels[LabelInstanceFamily]+"-"+it.Labels[LabelInstanceSize]+"-arm64-linux"]
			if !ok {
				continue
			}
			pairs++
			for _, zone := range Zones {
				if a, b := onDemandPrice(t, arm, zone), onDemandPrice(t, it, zone); a >= b {
					t.Errorf("%s costs %v in %s, not less than %s at %v", arm.Name, a, zone, it.Name, b)
				}
			}
		}
		if pairs < 30 {
			t.Errorf("only %d amd64/arm64 pairs", pairs)
		}
	})

	t.Run("offerings", func(t *testing.T) {
		for _, it := range its {
			if len(it.Offerings) != 2*len(Zones) {
				t.Errorf("%s has %d offerings, want spot and on-demand in %d zones", it.Name, len(it.Offerings), len(Zones))
			}
			spot := map[string]float64{}
			for _, o := range it.Offerings {
				if !o.Available || o.Price <= 0 {
					t.Errorf("%s offering %+v: want available with a positive price", it.Name, o)
				}
				if o.CapacityType == v1.CapacityTypeSpot {
					spot[o.Zone] = o.Price
				}
			}
			for _, zone := range Zones {
				if od := onDemandPrice(t, it, zone); spot[zone] >= od {
					t.Errorf("%s spot %v in %s is not cheaper than on-demand %v", it.Name, spot[zone], zone, od)
				}
			}
			if spot["test-zone-a"] == spot["test-zone-b"] || spot["test-zone-b"] == spot["test-zone-c"] {
				t.Errorf("%s spot prices %v do not differ per zone", it.Name, spot)
			}
		}
	})

	t.Run("overhead leaves room and follows size", func(t *testing.T) {
		var prevCPU, prevMem int64
		for _, cpus := range sizes {
			it := byName[fmt.Sprintf("m-%dx-amd64-linux", cpus)]
			alloc := it.Allocatable()
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
				if q := alloc[name]; q.Sign() <= 0 {
					t.Errorf("%s allocatable %s = %s", it.Name, name, q.String())
				}
			}
			oc, om := it.Overhead[corev1.ResourceCPU], it.Overhead[corev1.ResourceMemory]
			if oc.MilliValue() <= prevCPU || om.Value() < prevMem {
				t.Errorf("%s overhead cpu=%s memory=%s does not grow (cpu) or shrinks (memory) with size", it.Name, oc.String(), om.String())
			}
			prevCPU, prevMem = oc.MilliValue(), om.Value()
			if oc.MilliValue()*10 > cpus*1000 {
				t.Errorf("%s reserves %s of %d cpu, more than 10%%", it.Name, oc.String(), cpus)
			}
		}
	})

	t.Run("GPU family", func(t *testing.T) {
		for _, gpus := range []int64{1, 4, 8} {
			var found *InstanceType
			for _, it := range its {
				if q, ok := it.Capacity[ResourceGPU]; ok && q.Value() == gpus {
					found = it
				}
			}
			if found == nil {
				t.Errorf("no instance type with %d %s", gpus, ResourceGPU)
				continue
			}
			if found.Labels[LabelInstanceFamily] != "g" || found.Labels[LabelInstanceGPUCount] != strconv.FormatInt(gpus, 10) {
				t.Errorf("%s labels = %v", found.Name, found.Labels)
			}
			if cpu := found.Capacity[corev1.ResourceCPU]; onDemandPrice(t, found, "test-zone-a") <= float64(gpus)*pricePerGPU || cpu.Value() < 8 {
				t.Errorf("%s is priced below its GPUs or is too small", found.Name)
			}
		}
	})
}

func TestReservedMilliCPU(t *testing.T) {
	for cpus, want := range map[int64]int64{1: 60, 2: 70, 4: 80, 8: 90, 96: 310} {
		if got := ReservedMilliCPU(cpus); got != want {
			t.Errorf("ReservedMilliCPU(%d) = %d, want %d", cpus, got, want)
		}
	}
}
