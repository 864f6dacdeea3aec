package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// ResourceName is the VM's and the NIC's name for a claim, as the AKS provider names them: the same
// on every retry and after a restart, so a claim never gets a second VM.
func ResourceName(claim string) string { return "aks-" + claim }

// Create launches a NIC and a VM for the claim in the cheapest available offering it allows (spot
// before on-demand at equal price order). A VM that already exists under the claim's name is
// returned instead. Capacity and quota errors mark offerings unavailable and come back as an
// InsufficientCapacityError.
func (p *CloudProvider) Create(ctx context.Context, claim *v1.NodeClaim) (*v1.NodeClaim, error) {
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return nil, err
	}
	if !nc.IsTrue(azv1beta1.ConditionTypeReady) {
		msg := "not reconciled yet"
		if c := nc.GetCondition(azv1beta1.ConditionTypeReady); c != nil {
			msg = c.Message
		}
		return nil, fmt.Errorf("AKSNodeClass %s is not ready: %s", nc.Name, msg)
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, err
	}
	name := ResourceName(claim.Name)
	if vm, err := p.getVM(ctx, name); err != nil {
		return nil, err
	} else if vm != nil {
		return p.launchedClaim(nc, claim, its, vm)
	}
	options := cloudprovider.LaunchOptions(claim.Spec.Requirements, its, p.unavailable)
	if len(options) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Err: fmt.Errorf("no available offering of AKSNodeClass %s satisfies the requirements of %s", nc.Name, claim.Name)}
	}
	l := options[0]
	nicID, err := p.createNIC(ctx, nc, claim, l)
	if err != nil {
		return nil, err
	}
	vm, err := p.createVM(ctx, nc, claim, l, nicID)
	if err != nil {
		p.cleanupNIC(ctx, name)
		if code := errorCode(err); code != "" {
			if icErr := p.capacityError(err, code, l, its); icErr != nil {
				return nil, icErr
			}
		}
		return nil, fmt.Errorf("creating VM %s for %s: %w", name, claim.Name, err)
	}
	return p.launchedClaim(nc, claim, its, vm)
}

// tags are the ownership tags of every resource created for the claim, with the class's tags
// ('/' in keys replaced by '_', as the AKS provider does); Joist's own keys win.
func (p *CloudProvider) tags(nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim) map[string]*string {
	out := map[string]*string{}
	for k, v := range nc.Spec.Tags {
		out[strings.ReplaceAll(k, "/", "_")] = to.Ptr(v)
	}
	out[azv1beta1.TagKeyCluster] = to.Ptr(p.opts.ClusterName)
	out[azv1beta1.TagKeyBilling] = to.Ptr("linux")
	out[azv1beta1.TagKeyNodeClaim] = to.Ptr(claim.Name)
	if pool := claim.Labels[v1.NodePoolLabelKey]; pool != "" {
		out[azv1beta1.TagKeyNodePool] = to.Ptr(pool)
	}
	return out
}

func (p *CloudProvider) subnetID(nc *azv1beta1.AKSNodeClass) string {
	if nc.Spec.VNETSubnetID != nil && *nc.Spec.VNETSubnetID != "" {
		return *nc.Spec.VNETSubnetID
	}
	return p.opts.SubnetID
}

// createNIC creates (or finds) the claim's NIC: one dynamic IPv4 configuration in the subnet,
// accelerated networking where the size supports it.
func (p *CloudProvider) createNIC(ctx context.Context, nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, l cloudprovider.Launchable) (string, error) {
	name := ResourceName(claim.Name)
	nic := armnetwork.Interface{
		Location: to.Ptr(p.opts.Location),
		Tags:     p.tags(nc, claim),
		Properties: &armnetwork.InterfacePropertiesFormat{
			EnableAcceleratedNetworking: to.Ptr(l.InstanceType.Labels[azv1beta1.LabelSKUAcceleratedNetworking] == "true"),
			IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{
				Name: to.Ptr("ipconfig1"),
				Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
					Primary:                   to.Ptr(true),
					PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
					Subnet:                    &armnetwork.Subnet{ID: to.Ptr(p.subnetID(nc))},
				},
			}},
		},
	}
	poller, err := p.clients.NICs.BeginCreateOrUpdate(ctx, p.opts.ResourceGroup, name, nic, nil)
	if err != nil {
		return "", fmt.Errorf("creating NIC %s for %s: %w", name, claim.Name, err)
	}
	resp, err := poller.PollUntilDone(ctx, p.pollOptions())
	if err != nil {
		return "", fmt.Errorf("creating NIC %s for %s: %w", name, claim.Name, err)
	}
	return str(resp.ID), nil
}

// createVM creates the claim's VM: the size and zone of the offering, the class's image and OS
// disk (ephemeral when the size's cache or temp disk holds it), spot with eviction policy Delete,
// custom data that joins the node to the cluster, and NIC and disk deleted with the VM.
func (p *CloudProvider) createVM(ctx context.Context, nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, l cloudprovider.Launchable, nicID string) (*armcompute.VirtualMachine, error) {
	name := ResourceName(claim.Name)
	image := imageFor(nc, l.InstanceType)
	customData, err := p.customData(nc, claim, l)
	if err != nil {
		return nil, err
	}
	osDisk := &armcompute.OSDisk{
		CreateOption: to.Ptr(armcompute.DiskCreateOptionTypesFromImage),
		DeleteOption: to.Ptr(armcompute.DiskDeleteOptionTypesDelete),
		DiskSizeGB:   to.Ptr(nc.OSDiskSizeGB()),
		OSType:       to.Ptr(armcompute.OperatingSystemTypesLinux),
		Caching:      to.Ptr(armcompute.CachingTypesReadWrite),
		ManagedDisk:  &armcompute.ManagedDiskParameters{StorageAccountType: to.Ptr(armcompute.StorageAccountTypesPremiumLRS)},
	}
	if l.InstanceType.Labels[azv1beta1.LabelSKUStoragePremiumCapable] != "true" {
		osDisk.ManagedDisk.StorageAccountType = to.Ptr(armcompute.StorageAccountTypesStandardSSDLRS)
	}
	if ephemeralFits(l.InstanceType, nc.OSDiskSizeGB()) {
		osDisk.Caching = to.Ptr(armcompute.CachingTypesReadOnly)
		osDisk.DiffDiskSettings = &armcompute.DiffDiskSettings{Option: to.Ptr(armcompute.DiffDiskOptionsLocal)}
		osDisk.ManagedDisk.StorageAccountType = to.Ptr(armcompute.StorageAccountTypesStandardLRS)
	}
	vm := armcompute.VirtualMachine{
		Location: to.Ptr(p.opts.Location),
		Tags:     p.tags(nc, claim),
		Properties: &armcompute.VirtualMachineProperties{
			HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(l.InstanceType.Name))},
			StorageProfile: &armcompute.StorageProfile{
				ImageReference: &armcompute.ImageReference{CommunityGalleryImageID: to.Ptr(image)},
				OSDisk:         osDisk,
			},
			OSProfile: &armcompute.OSProfile{
				ComputerName:  to.Ptr(name),
				AdminUsername: to.Ptr("azureuser"),
				CustomData:    to.Ptr(base64.StdEncoding.EncodeToString(customData)),
				LinuxConfiguration: &armcompute.LinuxConfiguration{
					DisablePasswordAuthentication: to.Ptr(true),
					SSH: &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
						Path: to.Ptr("/home/azureuser/.ssh/authorized_keys"), KeyData: to.Ptr(p.opts.SSHPublicKey),
					}}},
				},
			},
			NetworkProfile: &armcompute.NetworkProfile{NetworkInterfaces: []*armcompute.NetworkInterfaceReference{{
				ID:         to.Ptr(nicID),
				Properties: &armcompute.NetworkInterfaceReferenceProperties{Primary: to.Ptr(true), DeleteOption: to.Ptr(armcompute.DeleteOptionsDelete)},
			}}},
		},
	}
	if nc.EncryptionAtHost() || nc.TrustedLaunch() {
		vm.Properties.SecurityProfile = &armcompute.SecurityProfile{EncryptionAtHost: to.Ptr(nc.EncryptionAtHost())}
		if nc.TrustedLaunch() {
			tl := nc.Spec.Security.TrustedLaunch
			vm.Properties.SecurityProfile.SecurityType = to.Ptr(armcompute.SecurityTypesTrustedLaunch)
			vm.Properties.SecurityProfile.UefiSettings = &armcompute.UefiSettings{VTpmEnabled: tl.VTPM, SecureBootEnabled: tl.SecureBoot}
		}
	}
	if zone, ok := strings.CutPrefix(l.Offering.Zone, p.opts.Location+"-"); ok {
		vm.Zones = []*string{to.Ptr(zone)}
	}
	if l.Offering.CapacityType == v1.CapacityTypeSpot {
		vm.Properties.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
		vm.Properties.EvictionPolicy = to.Ptr(armcompute.VirtualMachineEvictionPolicyTypesDelete)
		vm.Properties.BillingProfile = &armcompute.BillingProfile{MaxPrice: to.Ptr(-1.0)} // pay up to on-demand
	}
	poller, err := p.clients.VMs.BeginCreateOrUpdate(ctx, p.opts.ResourceGroup, name, vm, nil)
	if err != nil {
		return nil, err
	}
	resp, err := poller.PollUntilDone(ctx, p.pollOptions())
	if err != nil {
		return nil, err
	}
	return &resp.VirtualMachine, nil
}

// ephemeralFits reports whether the OS disk fits the size's largest ephemeral OS disk.
func ephemeralFits(it *catalog.InstanceType, osDiskGB int32) bool {
	var max int64
	_, _ = fmt.Sscan(it.Labels[azv1beta1.LabelSKUStorageEphemeralOSMaxSize], &max)
	return max > 0 && int64(osDiskGB) <= max
}

// cleanupNIC deletes the NIC of a VM that failed to launch (best effort: GC removes what is left).
func (p *CloudProvider) cleanupNIC(ctx context.Context, name string) {
	if poller, err := p.clients.NICs.BeginDelete(ctx, p.opts.ResourceGroup, name, nil); err == nil {
		_, _ = poller.PollUntilDone(ctx, p.pollOptions())
	}
}

// getVM returns the VM with the name, nil when there is none.
func (p *CloudProvider) getVM(ctx context.Context, name string) (*armcompute.VirtualMachine, error) {
	resp, err := p.clients.VMs.Get(ctx, p.opts.ResourceGroup, name, nil)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting VM %s: %w", name, err)
	}
	return &resp.VirtualMachine, nil
}

// launchedClaim is the claim as launched on vm.
func (p *CloudProvider) launchedClaim(nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, its []*catalog.InstanceType, vm *armcompute.VirtualMachine) (*v1.NodeClaim, error) {
	size := ""
	if vm.Properties != nil && vm.Properties.HardwareProfile != nil && vm.Properties.HardwareProfile.VMSize != nil {
		size = string(*vm.Properties.HardwareProfile.VMSize)
	}
	var it *catalog.InstanceType
	for _, candidate := range its {
		if candidate.Name == size {
			it = candidate
		}
	}
	if it == nil {
		return nil, errors.New("VM " + str(vm.Name) + " has size " + size + ", which AKSNodeClass " + nc.Name + " does not offer")
	}
	described := vmClaim(vm, p.opts.Location)
	l := cloudprovider.Launchable{InstanceType: it, Offering: catalog.Offering{Zone: described.Labels[v1.LabelTopologyZone], CapacityType: described.Labels[v1.CapacityTypeLabelKey]}}
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range l.Labels() {
		out.Labels[k] = v
	}
	priority := "regular"
	if l.Offering.CapacityType == v1.CapacityTypeSpot {
		priority = "spot"
	}
	out.Labels[azv1beta1.AKSLabelScaleSetPriority] = priority
	out.Labels[azv1beta1.AKSLabelPriority] = priority
	out.Labels[azv1beta1.AKSLabelCluster] = clusterLabel(p.opts.ResourceGroup)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[azv1beta1.AnnotationAKSNodeClassHash] = nc.Hash()
	out.Annotations[azv1beta1.AnnotationAKSNodeClassHashVersion] = azv1beta1.AKSNodeClassHashVersion
	out.Status.ProviderID = described.Status.ProviderID
	out.Status.ImageID = described.Status.ImageID
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	return out, nil
}

// isNotFound reports whether err is ARM's 404.
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == 404
}

// errorCode is ARM's error code of err, "" when err is not an ARM error.
func errorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}
