package fake

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// vm serves one VM (GET, PUT, DELETE) or the resource group's list.
func (s *Server) vm(w http.ResponseWriter, r *http.Request, m []string) {
	if !strings.EqualFold(m[1], ResourceGroup) {
		armError(w, 404, "ResourceGroupNotFound", "Resource group '"+m[1]+"' could not be found.")
		return
	}
	name := m[2]
	switch {
	case name == "" && r.Method == http.MethodGet:
		names := make([]string, 0, len(s.vms))
		for n := range s.vms {
			names = append(names, n)
		}
		sort.Strings(names)
		list := make([]*armcompute.VirtualMachine, 0, len(names))
		for _, n := range names {
			list = append(list, s.vms[n])
		}
		writeJSON(w, 200, map[string]any{"value": list})
	case r.Method == http.MethodGet:
		vm, ok := s.vms[name]
		if !ok {
			armError(w, 404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachines/"+name+"' under resource group '"+ResourceGroup+"' was not found.")
			return
		}
		writeJSON(w, 200, vm)
	case r.Method == http.MethodPut:
		s.putVM(w, r, name)
	case r.Method == http.MethodDelete:
		if _, ok := s.vms[name]; !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		s.vms[name].Properties.ProvisioningState = to.Ptr("Deleting")
		s.startOperation(w, r, &operation{polls: 1, done: func() { s.deleteVMLocked(name) }})
		w.WriteHeader(http.StatusAccepted)
	default:
		armError(w, 405, "MethodNotAllowed", r.Method)
	}
}

// putVM validates the request as ARM would for what the provider sends, then creates the VM
// through a long-running operation; injected failures fail the PUT or the operation.
func (s *Server) putVM(w http.ResponseWriter, r *http.Request, name string) {
	if existing, ok := s.vms[name]; ok {
		writeJSON(w, 200, existing) // PUT of an existing VM: ARM updates in place; the provider never relies on it
		return
	}
	vm := &armcompute.VirtualMachine{}
	if err := json.NewDecoder(r.Body).Decode(vm); err != nil {
		armError(w, 400, "InvalidRequestContent", err.Error())
		return
	}
	props := vm.Properties
	if props == nil || props.HardwareProfile == nil || props.HardwareProfile.VMSize == nil || props.NetworkProfile == nil || len(props.NetworkProfile.NetworkInterfaces) != 1 ||
		props.OSProfile == nil || props.OSProfile.CustomData == nil || props.StorageProfile == nil || props.StorageProfile.ImageReference == nil {
		armError(w, 400, "InvalidParameter", "size, one network interface, OS profile with custom data and an image are required")
		return
	}
	nicID := str(props.NetworkProfile.NetworkInterfaces[0].ID)
	nicName := nicID[strings.LastIndex(nicID, "/")+1:]
	if _, ok := s.nics[nicName]; !ok {
		armError(w, 400, "InvalidResourceReference", "Resource "+nicID+" referenced by resource "+name+" was not found.")
		return
	}
	size := string(*props.HardwareProfile.VMSize)
	zone := ""
	if len(vm.Zones) > 0 {
		zone = str(vm.Zones[0])
	}
	if !s.knownSize(size) {
		armError(w, 409, "SkuNotAvailable", "The requested VM size "+size+" is not available in location '"+Location+"'.")
		return
	}
	var fail *Failure
	for i, f := range s.failures {
		if (f.Size == "" || f.Size == size) && (f.Zone == "" || f.Zone == zone) {
			fail = &s.failures[i]
			s.failures = append(s.failures[:i:i], s.failures[i+1:]...)
			break
		}
	}
	if fail != nil && !fail.Async {
		armError(w, 409, fail.Code, fail.Message)
		return
	}
	vm.Name, vm.Type = to.Ptr(name), to.Ptr("Microsoft.Compute/virtualMachines")
	vm.ID = to.Ptr(s.rgID() + "/providers/Microsoft.Compute/virtualMachines/" + name)
	props.ProvisioningState = to.Ptr("Creating")
	props.TimeCreated = to.Ptr(time.Now().UTC())
	props.VMID = to.Ptr("vm-" + name)
	s.lastCustomData = str(props.OSProfile.CustomData)
	props.OSProfile.CustomData = nil // ARM never returns custom data
	op := &operation{polls: 1, held: s.holdCreates}
	if fail != nil {
		op.errCode, op.errMsg = fail.Code, fail.Message
	} else {
		s.vms[name] = vm
		s.nics[nicName].Properties.VirtualMachine = &armnetwork.SubResource{ID: vm.ID}
		op.done = func() { vm.Properties.ProvisioningState = to.Ptr("Succeeded") }
	}
	s.startOperation(w, r, op)
	writeJSON(w, 201, vm)
}

func (s *Server) knownSize(size string) bool {
	for _, sku := range s.skus {
		if str(sku.Name) == size {
			return true
		}
	}
	return false
}

// deleteVMLocked removes a VM and the NICs set to be deleted with it.
func (s *Server) deleteVMLocked(name string) {
	vm, ok := s.vms[name]
	if !ok {
		return
	}
	delete(s.vms, name)
	if vm.Properties.NetworkProfile == nil {
		return
	}
	for _, ref := range vm.Properties.NetworkProfile.NetworkInterfaces {
		if ref.Properties != nil && ref.Properties.DeleteOption != nil && *ref.Properties.DeleteOption == armcompute.DeleteOptionsDelete {
			id := str(ref.ID)
			delete(s.nics, id[strings.LastIndex(id, "/")+1:])
		}
	}
}

// nic serves one NIC (GET, PUT, DELETE) or the resource group's list.
func (s *Server) nic(w http.ResponseWriter, r *http.Request, m []string) {
	if !strings.EqualFold(m[1], ResourceGroup) {
		armError(w, 404, "ResourceGroupNotFound", "Resource group '"+m[1]+"' could not be found.")
		return
	}
	name := m[2]
	switch {
	case name == "" && r.Method == http.MethodGet:
		names := make([]string, 0, len(s.nics))
		for n := range s.nics {
			names = append(names, n)
		}
		sort.Strings(names)
		list := make([]*armnetwork.Interface, 0, len(names))
		for _, n := range names {
			list = append(list, s.nics[n])
		}
		writeJSON(w, 200, map[string]any{"value": list})
	case r.Method == http.MethodGet:
		nic, ok := s.nics[name]
		if !ok {
			armError(w, 404, "ResourceNotFound", "The Resource 'Microsoft.Network/networkInterfaces/"+name+"' was not found.")
			return
		}
		writeJSON(w, 200, nic)
	case r.Method == http.MethodPut:
		nic := &armnetwork.Interface{}
		if err := json.NewDecoder(r.Body).Decode(nic); err != nil {
			armError(w, 400, "InvalidRequestContent", err.Error())
			return
		}
		if nic.Properties == nil || len(nic.Properties.IPConfigurations) == 0 || nic.Properties.IPConfigurations[0].Properties == nil ||
			nic.Properties.IPConfigurations[0].Properties.Subnet == nil || !strings.EqualFold(str(nic.Properties.IPConfigurations[0].Properties.Subnet.ID), SubnetID) {
			armError(w, 400, "InvalidResourceReference", "the NIC's subnet does not exist")
			return
		}
		if existing, ok := s.nics[name]; ok {
			nic.Properties.VirtualMachine = existing.Properties.VirtualMachine
		}
		nic.Name, nic.Type = to.Ptr(name), to.Ptr("Microsoft.Network/networkInterfaces")
		nic.ID = to.Ptr(s.rgID() + "/providers/Microsoft.Network/networkInterfaces/" + name)
		nic.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
		nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress = to.Ptr("10.224.0." + jsonInt(4+len(s.nics)))
		s.nics[name] = nic
		s.startOperation(w, r, &operation{polls: 1})
		writeJSON(w, 201, nic)
	case r.Method == http.MethodDelete:
		nic, ok := s.nics[name]
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if nic.Properties != nil && nic.Properties.VirtualMachine != nil {
			armError(w, 400, "NicInUse", "Network Interface "+name+" is used by existing resource "+str(nic.Properties.VirtualMachine.ID)+".")
			return
		}
		s.startOperation(w, r, &operation{polls: 1, done: func() { delete(s.nics, name) }})
		w.WriteHeader(http.StatusAccepted)
	default:
		armError(w, 405, "MethodNotAllowed", r.Method)
	}
}

// prices serves the Retail Prices API: on-demand and spot Linux consumption prices of the
// region, two items per page to exercise NextPageLink.
func (s *Server) prices(w http.ResponseWriter, r *http.Request) {
	type item struct {
		ArmSKUName    string  `json:"armSkuName"`
		RetailPrice   float64 `json:"retailPrice"`
		SKUName       string  `json:"skuName"`
		ProductName   string  `json:"productName"`
		UnitOfMeasure string  `json:"unitOfMeasure"`
		Type          string  `json:"type"`
	}
	var items []item
	names := make([]string, 0, len(s.onDemand))
	for n := range s.onDemand {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		short := strings.TrimPrefix(n, "Standard_")
		items = append(items,
			item{n, s.onDemand[n], short, "Virtual Machines " + short + " Series", "1 Hour", "Consumption"},
			item{n, s.spotPrices[n], short + " Spot", "Virtual Machines " + short + " Series", "1 Hour", "Consumption"},
			item{n, s.onDemand[n] * 2, short, "Virtual Machines " + short + " Series Windows", "1 Hour", "Consumption"})
	}
	page := 0
	if p, err := json.Number(r.URL.Query().Get("page")).Int64(); err == nil {
		page = int(p)
	}
	const perPage = 20
	start := min(page*perPage, len(items))
	end := min(start+perPage, len(items))
	next := ""
	if end < len(items) {
		next = "http://" + r.Host + "/api/retail/prices?" + pageQuery(r, page+1)
	}
	writeJSON(w, 200, map[string]any{"Items": items[start:end], "NextPageLink": next, "Count": end - start})
}

func pageQuery(r *http.Request, page int) string {
	q := r.URL.Query()
	q.Set("page", strings.TrimSpace(jsonInt(page)))
	return q.Encode()
}

func jsonInt(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
