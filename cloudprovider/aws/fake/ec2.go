package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

func (s *Server) serveEC2(w http.ResponseWriter, action string, p url.Values) {
	handlers := map[string]func(*xb, url.Values) (int, string, string){
		"DescribeSubnets":               s.describeSubnets,
		"DescribeSecurityGroups":        s.describeSecurityGroups,
		"DescribeImages":                s.describeImages,
		"DescribeInstanceTypes":         s.describeInstanceTypes,
		"DescribeInstanceTypeOfferings": s.describeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":      s.describeSpotPriceHistory,
		"CreateLaunchTemplate":          s.createLaunchTemplate,
		"DescribeLaunchTemplates":       s.describeLaunchTemplates,
		"DeleteLaunchTemplate":          s.deleteLaunchTemplate,
		"CreateFleet":                   s.createFleet,
		"DescribeInstances":             s.describeInstances,
		"TerminateInstances":            s.terminateInstances,
		"CreateTags":                    s.createTags,
	}
	h, ok := handlers[action]
	if !ok {
		writeEC2Error(w, http.StatusBadRequest, "InvalidAction", "the fake does not implement "+action)
		return
	}
	x := &xb{}
	x.WriteString(`<?xml version="1.0" encoding="UTF-8"?>`)
	x.WriteString(`<` + action + `Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">`)
	x.elem("requestId", "fake-request")
	if status, code, msg := h(x, p); status != 0 {
		writeEC2Error(w, status, code, msg)
		return
	}
	x.WriteString(`</` + action + `Response>`)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write([]byte(x.String()))
}

func (s *Server) describeSubnets(x *xb, p url.Values) (int, string, string) {
	fs, ids := filters(p), values(p, "SubnetId")
	x.open("subnetSet")
	for _, sn := range s.subnets {
		if (len(ids) > 0 && !contains(ids, sn.ID)) || !matches(fs, map[string]string{"subnet-id": sn.ID, "availability-zone": sn.Zone}, sn.Tags) {
			continue
		}
		x.open("item")
		x.elem("subnetId", sn.ID)
		x.elem("availabilityZone", sn.Zone)
		x.elem("availabilityZoneId", sn.ZoneID)
		x.elem("availableIpAddressCount", strconv.Itoa(sn.AvailableIPs))
		x.elem("state", "available")
		x.tags(sn.Tags)
		x.close("item")
	}
	x.close("subnetSet")
	return 0, "", ""
}

func (s *Server) describeSecurityGroups(x *xb, p url.Values) (int, string, string) {
	fs, ids := filters(p), values(p, "GroupId")
	x.open("securityGroupInfo")
	for _, sg := range s.securityGroups {
		if (len(ids) > 0 && !contains(ids, sg.ID)) || !matches(fs, map[string]string{"group-id": sg.ID, "group-name": sg.Name}, sg.Tags) {
			continue
		}
		x.open("item")
		x.elem("groupId", sg.ID)
		x.elem("groupName", sg.Name)
		x.tags(sg.Tags)
		x.close("item")
	}
	x.close("securityGroupInfo")
	return 0, "", ""
}

func (s *Server) describeImages(x *xb, p url.Values) (int, string, string) {
	fs, ids, owners := filters(p), values(p, "ImageId"), values(p, "Owner")
	for _, id := range ids {
		if s.image(id) == nil {
			return http.StatusBadRequest, "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", id)
		}
	}
	x.open("imagesSet")
	for _, img := range s.images {
		if (len(ids) > 0 && !contains(ids, img.ID)) || (len(owners) > 0 && !contains(owners, img.Owner)) ||
			!matches(fs, map[string]string{"image-id": img.ID, "name": img.Name, "owner-id": img.Owner, "architecture": img.Arch}, img.Tags) {
			continue
		}
		x.open("item")
		x.elem("imageId", img.ID)
		x.elem("name", img.Name)
		x.elem("imageOwnerId", img.Owner)
		x.elem("architecture", img.Arch)
		x.elem("creationDate", img.CreationDate)
		x.elem("imageState", "available")
		if img.Deprecated {
			x.elem("deprecationTime", "2020-01-01T00:00:00.000Z")
		}
		x.tags(img.Tags)
		x.close("item")
	}
	x.close("imagesSet")
	return 0, "", ""
}

func (s *Server) image(id string) *Image {
	for _, img := range s.images {
		if img.ID == id {
			return img
		}
	}
	return nil
}

func (s *Server) describeInstanceTypes(x *xb, p url.Values) (int, string, string) {
	start, end, next := page(p, len(s.instanceTypes), s.PageSize)
	x.open("instanceTypeSet")
	for _, info := range s.instanceTypes[start:end] {
		arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[info.Arch]
		x.open("item")
		x.elem("instanceType", info.Name)
		x.elem("currentGeneration", "true")
		x.open("supportedUsageClasses")
		for _, c := range []string{"on-demand", "spot"} {
			x.elem("item", c)
		}
		x.close("supportedUsageClasses")
		x.elem("hypervisor", info.Labels["karpenter.k8s.aws/instance-hypervisor"])
		x.open("processorInfo")
		x.open("supportedArchitectures")
		x.elem("item", arch)
		x.close("supportedArchitectures")
		x.close("processorInfo")
		x.open("vCpuInfo")
		x.elem("defaultVCpus", strconv.FormatInt(info.VCPU, 10))
		x.close("vCpuInfo")
		x.open("memoryInfo")
		x.elem("sizeInMiB", strconv.FormatInt(info.MemoryMiB, 10))
		x.close("memoryInfo")
		x.open("networkInfo")
		x.elem("maximumNetworkInterfaces", strconv.FormatInt(info.ENIs, 10))
		x.elem("ipv4AddressesPerInterface", strconv.FormatInt(info.IPv4PerENI, 10))
		x.elem("defaultNetworkCardIndex", "0")
		x.open("networkCards")
		x.open("item")
		x.elem("networkCardIndex", "0")
		x.elem("maximumNetworkInterfaces", strconv.FormatInt(info.ENIs, 10))
		x.close("item")
		x.close("networkCards")
		x.close("networkInfo")
		if n := info.Labels["karpenter.k8s.aws/instance-gpu-count"]; n != "" {
			x.open("gpuInfo")
			x.open("gpus")
			x.open("item")
			x.elem("name", info.Labels["karpenter.k8s.aws/instance-gpu-name"])
			x.elem("manufacturer", info.Labels["karpenter.k8s.aws/instance-gpu-manufacturer"])
			x.elem("count", n)
			x.open("memoryInfo")
			x.elem("sizeInMiB", info.Labels["karpenter.k8s.aws/instance-gpu-memory"])
			x.close("memoryInfo")
			x.close("item")
			x.close("gpus")
			x.close("gpuInfo")
		}
		x.close("item")
	}
	x.close("instanceTypeSet")
	if next != "" {
		x.elem("nextToken", next)
	}
	return 0, "", ""
}

func (s *Server) describeInstanceTypeOfferings(x *xb, p url.Values) (int, string, string) {
	type offering struct{ it, zone string }
	var all []offering
	for _, info := range s.instanceTypes {
		for _, z := range s.typeZones[info.Name] {
			all = append(all, offering{info.Name, z})
		}
	}
	start, end, next := page(p, len(all), s.PageSize)
	x.open("instanceTypeOfferingSet")
	for _, o := range all[start:end] {
		x.open("item")
		x.elem("instanceType", o.it)
		x.elem("locationType", "availability-zone")
		x.elem("location", o.zone)
		x.close("item")
	}
	x.close("instanceTypeOfferingSet")
	if next != "" {
		x.elem("nextToken", next)
	}
	return 0, "", ""
}

func (s *Server) describeSpotPriceHistory(x *xb, p url.Values) (int, string, string) {
	start, end, next := page(p, len(s.spotPrices), s.PageSize)
	x.open("spotPriceHistorySet")
	for _, sp := range s.spotPrices[start:end] {
		x.open("item")
		x.elem("instanceType", sp.InstanceType)
		x.elem("availabilityZone", sp.Zone)
		x.elem("spotPrice", strconv.FormatFloat(sp.Price, 'f', 6, 64))
		x.elem("productDescription", "Linux/UNIX")
		x.elem("timestamp", s.clock().UTC().Format("2006-01-02T15:04:05.000Z"))
		x.close("item")
	}
	x.close("spotPriceHistorySet")
	if next != "" {
		x.elem("nextToken", next)
	}
	return 0, "", ""
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) createTags(x *xb, p url.Values) (int, string, string) {
	ids := values(p, "ResourceId")
	for _, inst := range s.instances {
		if !contains(ids, inst.ID) {
			continue
		}
		if inst.Tags == nil {
			inst.Tags = map[string]string{}
		}
		for _, i := range indices(p, "Tag") {
			t := item(p, "Tag", i)
			inst.Tags[t.Get("Key")] = t.Get("Value")
		}
	}
	x.elem("return", "true")
	return 0, "", ""
}

func (s *Server) zoneOfSubnet(id string) string {
	for _, sn := range s.subnets {
		if sn.ID == id {
			return sn.Zone
		}
	}
	return ""
}
