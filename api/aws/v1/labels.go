package v1

import corev1 "k8s.io/api/core/v1"

// Well-known labels the AWS provider puts on instance types (and so on nodes); NodePool
// requirements may select on them as they do upstream.
const (
	Group = "karpenter.k8s.aws"

	LabelInstanceHypervisor                = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransit       = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                  = Group + "/instance-category"
	LabelInstanceFamily                    = Group + "/instance-family"
	LabelInstanceGeneration                = Group + "/instance-generation"
	LabelInstanceLocalNVME                 = Group + "/instance-local-nvme"
	LabelInstanceSize                      = Group + "/instance-size"
	LabelInstanceCPU                       = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer           = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                    = Group + "/instance-memory"
	LabelInstanceEBSBandwidth              = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth          = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                   = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer           = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                  = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                 = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName           = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer   = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount          = Group + "/instance-accelerator-count"
	LabelNodeClass                         = Group + "/ec2nodeclass"
	LabelTopologyZoneID                    = "topology.k8s.aws/zone-id"

	// AnnotationEC2NodeClassHash records the NodeClass's static hash on NodeClaims launched from it.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion is the version of the hash function; claims hashed by
	// another version are not compared.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"

	// Tag keys on EC2 resources.
	NodePoolTagKey       = "karpenter.sh/nodepool"
	NodeClaimTagKey      = "karpenter.sh/nodeclaim"
	NodeClassTagKey      = LabelNodeClass
	EKSClusterNameTagKey = "eks:eks-cluster-name"
	NameTagKey           = "Name"
	// ClusterTagKeyPrefix + cluster name = "owned" marks every resource of the cluster.
	ClusterTagKeyPrefix = "kubernetes.io/cluster/"
)

// AMI families.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// Extended resources instance types report.
const (
	ResourceNVIDIAGPU   corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU      corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron   corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceHabanaGaudi corev1.ResourceName = "habana.ai/gaudi"
	ResourceEFA         corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourceAWSPodENI   corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
)
