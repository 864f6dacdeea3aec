package azure

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// ProviderID is the kubelet's provider ID of a VM: azure:// followed by its resource ID.
func ProviderID(vmID string) string { return "azure://" + vmID }

// vmName parses azure:///subscriptions/…/virtualMachines/<name>.
func vmName(providerID string) (string, error) {
	id, ok := strings.CutPrefix(providerID, "azure://")
	if !ok {
		return "", fmt.Errorf("provider id %q is not an Azure provider id (azure:///subscriptions/…/virtualMachines/<name>)", providerID)
	}
	rid, err := arm.ParseResourceID(id)
	if err != nil || !strings.EqualFold(rid.ResourceType.String(), "Microsoft.Compute/virtualMachines") {
		return "", fmt.Errorf("provider id %q does not name a virtual machine", providerID)
	}
	return rid.Name, nil
}

// vmClaim describes a VM as a NodeClaim named after its karpenter.azure.com_nodeclaim tag.
func vmClaim(vm *armcompute.VirtualMachine, location string) *v1.NodeClaim {
	tags := map[string]string{}
	for k, v := range vm.Tags {
		tags[k] = str(v)
	}
	zone := "0"
	if len(vm.Zones) > 0 && vm.Zones[0] != nil {
		zone = location + "-" + *vm.Zones[0]
	}
	capacityType := v1.CapacityTypeOnDemand
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: tags[azv1beta1.TagKeyNodeClaim], Labels: map[string]string{
		v1.LabelTopologyZone: zone, v1.NodePoolLabelKey: tags[azv1beta1.TagKeyNodePool],
	}}}
	if props := vm.Properties; props != nil {
		if props.Priority != nil && *props.Priority == armcompute.VirtualMachinePriorityTypesSpot {
			capacityType = v1.CapacityTypeSpot
		}
		if props.HardwareProfile != nil && props.HardwareProfile.VMSize != nil {
			claim.Labels[v1.LabelInstanceType] = string(*props.HardwareProfile.VMSize)
		}
		if props.TimeCreated != nil {
			claim.CreationTimestamp = metav1.NewTime(*props.TimeCreated)
		}
		if sp := props.StorageProfile; sp != nil && sp.ImageReference != nil {
			claim.Status.ImageID = str(sp.ImageReference.CommunityGalleryImageID)
		}
	}
	claim.Labels[v1.CapacityTypeLabelKey] = capacityType
	claim.Status.ProviderID = ProviderID(str(vm.ID))
	return claim
}

// owned reports whether the VM carries this cluster's tag.
func (p *CloudProvider) owned(vm *armcompute.VirtualMachine) bool {
	return vm != nil && str(vm.Tags[azv1beta1.TagKeyCluster]) == p.opts.ClusterName
}

// gone reports whether the VM is on its way out (being deleted, or a spot VM Azure evicted).
func gone(vm *armcompute.VirtualMachine) bool {
	return vm.Properties != nil && strings.EqualFold(str(vm.Properties.ProvisioningState), "Deleting")
}

// Get returns the claim of the VM with the provider ID; NotFound when it is gone.
func (p *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	name, err := vmName(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	vm, err := p.getVM(ctx, name)
	if err != nil {
		return nil, err
	}
	if vm == nil || gone(vm) || !p.owned(vm) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("VM %s", name))
	}
	return vmClaim(vm, p.opts.Location), nil
}

// List returns every VM of the node resource group tagged for this cluster and a NodePool.
func (p *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	var out []*v1.NodeClaim
	pager := p.clients.VMs.NewListPager(p.opts.ResourceGroup, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing VMs in %s: %w", p.opts.ResourceGroup, err)
		}
		for _, vm := range page.Value {
			if !p.owned(vm) || vm.Tags[azv1beta1.TagKeyNodePool] == nil || gone(vm) {
				continue
			}
			out = append(out, vmClaim(vm, p.opts.Location))
		}
	}
	return out, nil
}

// Delete deletes the claim's VM (its NIC and OS disk go with it) and, when no VM was created, the
// NIC. It returns NotFound once both are gone.
func (p *CloudProvider) Delete(ctx context.Context, claim *v1.NodeClaim) error {
	name := ResourceName(claim.Name)
	if claim.Status.ProviderID != "" {
		n, err := vmName(claim.Status.ProviderID)
		if err != nil {
			return cloudprovider.NewNodeClaimNotFoundError(err)
		}
		name = n
	}
	vm, err := p.getVM(ctx, name)
	if err != nil {
		return err
	}
	if vm != nil && !gone(vm) {
		poller, err := p.clients.VMs.BeginDelete(ctx, p.opts.ResourceGroup, name, nil)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting VM %s: %w", name, err)
		}
		if err == nil {
			if _, err := poller.PollUntilDone(ctx, p.pollOptions()); err != nil && !isNotFound(err) {
				return fmt.Errorf("deleting VM %s: %w", name, err)
			}
		}
	}
	if err := p.deleteNIC(ctx, name); err != nil {
		return err
	}
	return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("VM %s deleted", name))
}

func (p *CloudProvider) deleteNIC(ctx context.Context, name string) error {
	poller, err := p.clients.NICs.BeginDelete(ctx, p.opts.ResourceGroup, name, nil)
	if isNotFound(err) {
		return nil
	}
	if err == nil {
		_, err = poller.PollUntilDone(ctx, p.pollOptions())
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting NIC %s: %w", name, err)
	}
	return nil
}
