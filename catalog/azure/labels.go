package azure

import (
	"fmt"
	"strings"

	"github.com/joist-dev/joist/catalog"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
)

// restrictedSizes are the low-performance sizes AKS does not allow in node pools.
var restrictedSizes = map[string]bool{
	"Standard_A0": true, "Standard_A1": true, "Standard_A1_v2": true, "Standard_B1s": true, "Standard_B1ms": true,
	"Standard_F1": true, "Standard_F1s": true, "Basic_A0": true, "Basic_A1": true, "Basic_A2": true, "Basic_A3": true, "Basic_A4": true,
}

// Unsupported says why AKS nodes cannot use the SKU (as the AKS provider filters), "" when they can:
// fewer than 2 vCPUs or 3.5 GiB, a size AKS restricts, a GPU size AKS has no support for,
// constrained vCPUs, or a confidential (DC, EC) size.
func Unsupported(s *SKU) string {
	size, ok := ParseSize(s.Name)
	switch {
	case s.VCPU() < 2:
		return "fewer than 2 vCPUs"
	case s.MemoryGiB() < 3.5:
		return "less than 3.5 GiB of memory"
	case restrictedSizes[s.Name]:
		return "not allowed in AKS node pools"
	case s.GPUs() > 0 && GPUManufacturer(s.Name) == "":
		return "a GPU size AKS does not support"
	case ok && size.Constrained != "":
		return "constrained vCPUs"
	case ok && (size.Family+size.Subfamily == "DC" || size.Family+size.Subfamily == "EC"):
		return "confidential VMs are not supported"
	}
	return ""
}

// EphemeralOSMaxSizeGB is the largest ephemeral OS disk the SKU takes, in GB (10⁹ bytes): the NVMe
// disk where ephemeral OS disks may go there, else the cache disk, else the resource (temp) disk;
// 0 when ephemeral OS disks are not supported.
func EphemeralOSMaxSizeGB(s *SKU) int64 {
	if !s.Bool("EphemeralOSDiskSupported") {
		return 0
	}
	if nvme := s.Int("NvmeDiskSizeInMiB"); nvme > 0 && strings.Contains(","+s.Capability("SupportedEphemeralOSDiskPlacements")+",", ",NvmeDisk,") {
		return nvme * 1024 * 1024 / 1e9
	}
	if cached := s.Int("CachedDiskBytes"); cached > 0 {
		return cached / 1e9
	}
	return s.Int("MaxResourceVolumeMB") * 1024 * 1024 / 1e9
}

// HyperVGeneration is the newest Hyper-V generation the SKU boots ("2" or "1").
func HyperVGeneration(s *SKU) string {
	if strings.Contains(s.Capability("HyperVGenerations"), "V2") {
		return "2"
	}
	return "1"
}

// Labels are the node labels of a SKU, named as the AKS provider names them.
func Labels(s *SKU, st Settings) map[string]string {
	cpu := fmt.Sprint(s.VCPU())
	memMiB := fmt.Sprint(int64(s.MemoryGiB() * 1024))
	labels := map[string]string{
		"kubernetes.io/arch":                    s.Arch(),
		"kubernetes.io/os":                      "linux",
		azv1beta1.LabelSKUName:                  s.Name,
		azv1beta1.LabelSKUCPU:                   cpu,
		azv1beta1.LabelSKUMemory:                memMiB,
		azv1beta1.AKSLabelCPU:                   cpu,
		azv1beta1.AKSLabelMemory:                memMiB,
		azv1beta1.LabelSKUAcceleratedNetworking: fmt.Sprint(s.Bool("AcceleratedNetworkingEnabled")),
		azv1beta1.LabelSKUStoragePremiumCapable: fmt.Sprint(s.Bool("PremiumIO")),
		azv1beta1.LabelSKUUltraSSD:              "false", // Joist attaches no Ultra SSDs
		azv1beta1.LabelSKUHyperVGeneration:      HyperVGeneration(s),
		azv1beta1.LabelPlacementScope:           "zonal",
		azv1beta1.AKSLabelOSSKU:                 st.OSSKU,
		azv1beta1.LabelSKUGPUCount:              "0",
	}
	if size, ok := ParseSize(s.Name); ok {
		labels[azv1beta1.LabelSKUFamily] = size.Family
		labels[azv1beta1.LabelSKUSeries] = size.Series()
		labels[azv1beta1.LabelSKUVersion] = size.VersionNumber()
		if m := GPUManufacturer(s.Name); m != "" && size.Accelerator != "" {
			labels[azv1beta1.LabelSKUGPUName] = size.Accelerator
		}
	}
	if eph := EphemeralOSMaxSizeGB(s); eph > 0 {
		labels[azv1beta1.LabelSKUStorageEphemeralOSMaxSize] = fmt.Sprint(eph)
	}
	if m := GPUManufacturer(s.Name); m != "" {
		labels[azv1beta1.LabelSKUGPUManufacturer] = m
		labels[azv1beta1.LabelSKUGPUCount] = fmt.Sprint(s.GPUs())
	}
	if st.FIPS {
		labels[azv1beta1.AKSLabelFIPSEnabled] = "true"
	}
	return labels
}

// Build turns a SKU into the catalog data type (no offerings).
func Build(s *SKU, st Settings) *catalog.InstanceType {
	return &catalog.InstanceType{Name: s.Name, Capacity: Capacity(s, st), Overhead: Overhead(s), Labels: Labels(s, st)}
}
