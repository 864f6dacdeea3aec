package v1beta1

// Labels Joist's Azure provider puts on nodes, as the AKS Karpenter provider names them. The
// karpenter.azure.com/sku-* labels describe the VM size; the kubernetes.azure.com ones are AKS's.
const (
	LabelSKUName                      = "karpenter.azure.com/sku-name"    // Standard_D4s_v5
	LabelSKUFamily                    = "karpenter.azure.com/sku-family"  // D
	LabelSKUSeries                    = "karpenter.azure.com/sku-series"  // Ds_v5
	LabelSKUVersion                   = "karpenter.azure.com/sku-version" // 5 (1 when the name has none)
	LabelSKUCPU                       = "karpenter.azure.com/sku-cpu"
	LabelSKUMemory                    = "karpenter.azure.com/sku-memory" // MiB
	LabelSKUAcceleratedNetworking     = "karpenter.azure.com/sku-networking-accelerated"
	LabelSKUStoragePremiumCapable     = "karpenter.azure.com/sku-storage-premium-capable"
	LabelSKUStorageEphemeralOSMaxSize = "karpenter.azure.com/sku-storage-ephemeralos-maxsize" // GB
	LabelSKUUltraSSD                  = "karpenter.azure.com/sku-storage-ultra-ssd"
	LabelSKUGPUName                   = "karpenter.azure.com/sku-gpu-name"
	LabelSKUGPUManufacturer           = "karpenter.azure.com/sku-gpu-manufacturer"
	LabelSKUGPUCount                  = "karpenter.azure.com/sku-gpu-count"
	LabelSKUHyperVGeneration          = "karpenter.azure.com/sku-hyperv-generation"
	LabelPlacementScope               = "karpenter.azure.com/placement-scope"

	AKSLabelCPU              = "kubernetes.azure.com/sku-cpu"
	AKSLabelMemory           = "kubernetes.azure.com/sku-memory"
	AKSLabelCluster          = "kubernetes.azure.com/cluster"
	AKSLabelMode             = "kubernetes.azure.com/mode"
	AKSLabelScaleSetPriority = "kubernetes.azure.com/scalesetpriority"
	AKSLabelPriority         = "kubernetes.azure.com/priority"
	AKSLabelOSSKU            = "kubernetes.azure.com/os-sku"
	AKSLabelFIPSEnabled      = "kubernetes.azure.com/fips_enabled"

	// AnnotationAKSNodeClassHash and its version are set on NodeClaims at launch for drift.
	AnnotationAKSNodeClassHash        = "karpenter.azure.com/aksnodeclass-hash"
	AnnotationAKSNodeClassHashVersion = "karpenter.azure.com/aksnodeclass-hash-version"
)

// Tag keys on every Azure resource Joist creates; they mark ownership and link the VM to its claim.
const (
	TagKeyCluster   = "karpenter.azure.com_cluster"
	TagKeyNodePool  = "karpenter.sh_nodepool"
	TagKeyNodeClaim = "karpenter.azure.com_nodeclaim" // Joist's: the claim a resource was created for
	TagKeyBilling   = "compute.aks.billing"
)
