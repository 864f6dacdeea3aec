package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

func (s *Server) createLaunchTemplate(x *xb, p url.Values) (int, string, string) {
	name := p.Get("LaunchTemplateName")
	if name == "" {
		return http.StatusBadRequest, "MissingParameter", "LaunchTemplateName is required"
	}
	if _, ok := s.launchTemplates[name]; ok {
		return http.StatusBadRequest, "InvalidLaunchTemplateName.AlreadyExistsException", fmt.Sprintf("Launch template name already in use: %s", name)
	}
	if img := sub(p, "LaunchTemplateData").Get("ImageId"); img != "" && s.image(img) == nil {
		return http.StatusBadRequest, "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", img)
	}
	lt := &LaunchTemplate{ID: s.id("lt"), Name: name, Tags: tagSpecs(p, "launch-template"), Data: sub(p, "LaunchTemplateData")}
	s.launchTemplates[name] = lt
	x.open("launchTemplate")
	s.writeLT(x, lt)
	x.close("launchTemplate")
	return 0, "", ""
}

func (s *Server) writeLT(x *xb, lt *LaunchTemplate) {
	x.elem("launchTemplateId", lt.ID)
	x.elem("launchTemplateName", lt.Name)
	x.elem("defaultVersionNumber", "1")
	x.elem("latestVersionNumber", "1")
	x.tags(lt.Tags)
}

func (s *Server) describeLaunchTemplates(x *xb, p url.Values) (int, string, string) {
	names, fs := values(p, "LaunchTemplateName"), filters(p)
	for _, n := range names {
		if _, ok := s.launchTemplates[n]; !ok {
			return http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException", fmt.Sprintf("At least one of the launch templates specified in the request does not exist: %s", n)
		}
	}
	keys := make([]string, 0, len(s.launchTemplates))
	for k := range s.launchTemplates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	x.open("launchTemplates")
	for _, k := range keys {
		lt := s.launchTemplates[k]
		if (len(names) > 0 && !contains(names, lt.Name)) || !matches(fs, map[string]string{"launch-template-name": lt.Name}, lt.Tags) {
			continue
		}
		x.open("item")
		s.writeLT(x, lt)
		x.close("item")
	}
	x.close("launchTemplates")
	return 0, "", ""
}

func (s *Server) deleteLaunchTemplate(x *xb, p url.Values) (int, string, string) {
	name := p.Get("LaunchTemplateName")
	lt, ok := s.launchTemplates[name]
	if !ok {
		return http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException", "launch template " + name + " does not exist"
	}
	delete(s.launchTemplates, name)
	x.open("launchTemplate")
	s.writeLT(x, lt)
	x.close("launchTemplate")
	return 0, "", ""
}

type override struct {
	lt, instanceType, subnet, zone string
	price                          float64
}

// createFleet serves type=instant fleets of one instance: it tries the overrides cheapest first
// (lowest-price and price-capacity-optimized alike: the fake's pools have no capacity signal but
// exhaustion), reporting an InsufficientInstanceCapacity error for each exhausted pool it meets.
func (s *Server) createFleet(x *xb, p url.Values) (int, string, string) {
	token := p.Get("ClientToken")
	request := url.Values{}
	for k, v := range p {
		if k != "ClientToken" {
			request[k] = v
		}
	}
	if prev, ok := s.fleetTokens[token]; ok && token != "" {
		if prev.request != request.Encode() {
			return http.StatusBadRequest, "IdempotentParameterMismatch", "The client token " + token + " was used before with different parameters."
		}
		x.WriteString(prev.answer)
		return 0, "", ""
	}
	start := x.Len()
	status, code, msg := s.launchFleet(x, p)
	if status == 0 && token != "" {
		s.fleetTokens[token] = fleetAnswer{request: request.Encode(), answer: x.String()[start:]}
	}
	return status, code, msg
}

// fleetAnswer is a CreateFleet answer kept for its ClientToken.
type fleetAnswer struct{ request, answer string }

// launchFleet launches an instant fleet (see createFleet).
func (s *Server) launchFleet(x *xb, p url.Values) (int, string, string) {
	if p.Get("Type") != "instant" {
		return http.StatusBadRequest, "InvalidParameterValue", "the fake serves only instant fleets"
	}
	capacityType := p.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	if capacityType != "spot" && capacityType != "on-demand" {
		return http.StatusBadRequest, "InvalidParameterValue", "DefaultTargetCapacityType must be spot or on-demand"
	}
	var overrides []override
	for _, i := range indices(p, "LaunchTemplateConfigs") {
		cfg := item(p, "LaunchTemplateConfigs", i)
		lt := cfg.Get("LaunchTemplateSpecification.LaunchTemplateName")
		if _, ok := s.launchTemplates[lt]; !ok {
			return http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException", "launch template " + lt + " does not exist"
		}
		for _, j := range indices(cfg, "Overrides") {
			o := item(cfg, "Overrides", j)
			ov := override{lt: lt, instanceType: o.Get("InstanceType"), subnet: o.Get("SubnetId")}
			ov.zone = s.zoneOfSubnet(ov.subnet)
			if ov.zone == "" {
				return http.StatusBadRequest, "InvalidSubnetID.NotFound", "subnet " + ov.subnet + " does not exist"
			}
			ov.price = s.price(ov.instanceType, ov.zone, capacityType)
			overrides = append(overrides, ov)
		}
	}
	if len(overrides) == 0 {
		return http.StatusBadRequest, "InvalidParameterValue", "no overrides"
	}
	sort.SliceStable(overrides, func(i, j int) bool { return overrides[i].price < overrides[j].price })
	x.elem("fleetId", s.id("fleet"))
	if s.bareFleetErrors > 0 {
		s.bareFleetErrors--
		x.open("errorSet")
		x.open("item")
		x.elem("errorCode", s.bareFleetError)
		x.elem("errorMessage", "There is no capacity available that matches your request.")
		x.elem("lifecycle", capacityType)
		x.close("item")
		x.close("errorSet")
		x.open("fleetInstanceSet")
		x.close("fleetInstanceSet")
		return 0, "", ""
	}
	var launched *Instance
	var failed []fleetError
	for _, ov := range overrides {
		lt := s.launchTemplates[ov.lt]
		if msg := s.authorize(s.launchAuthz(lt, ov, capacityType, p)); msg != "" {
			failed = append(failed, fleetError{ov, "UnauthorizedOperation", unauthorizedMessage(msg)})
			continue
		}
		if code, msg := s.launchFault(ov, capacityType); code != "" {
			failed = append(failed, fleetError{ov, code, msg})
			continue
		}
		pool := Pool{InstanceType: ov.instanceType, Zone: ov.zone, CapacityType: capacityType}
		if left, limited := s.pools[pool]; limited && left <= 0 {
			failed = append(failed, fleetError{ov, "InsufficientInstanceCapacity", "We currently do not have sufficient " + ov.instanceType + " capacity in the Availability Zone you requested (" + ov.zone + ")."})
			continue
		}
		if left, limited := s.pools[pool]; limited {
			s.pools[pool] = left - 1
		}
		launched = s.launch(ov, capacityType, p)
		break
	}
	x.open("errorSet")
	for _, f := range failed {
		ov := f.ov
		x.open("item")
		x.elem("errorCode", f.code)
		x.elem("errorMessage", f.msg)
		writeLTOverrides(x, ov)
		x.elem("lifecycle", capacityType)
		x.close("item")
	}
	x.close("errorSet")
	x.open("fleetInstanceSet")
	if launched != nil {
		x.open("item")
		x.open("instanceIds")
		x.elem("item", launched.ID)
		x.close("instanceIds")
		x.elem("instanceType", launched.InstanceType)
		x.elem("lifecycle", capacityType)
		writeLTOverrides(x, override{lt: launched.LaunchTemplate, instanceType: launched.InstanceType, subnet: launched.SubnetID, zone: launched.Zone})
		x.close("item")
	}
	x.close("fleetInstanceSet")
	return 0, "", ""
}

func writeLTOverrides(x *xb, ov override) {
	x.open("launchTemplateAndOverrides")
	x.open("launchTemplateSpecification")
	x.elem("launchTemplateName", ov.lt)
	x.close("launchTemplateSpecification")
	x.open("overrides")
	x.elem("instanceType", ov.instanceType)
	x.elem("subnetId", ov.subnet)
	x.elem("availabilityZone", ov.zone)
	x.close("overrides")
	x.close("launchTemplateAndOverrides")
}

func (s *Server) price(instanceType, zone, capacityType string) float64 {
	if capacityType == "spot" {
		for _, sp := range s.spotPrices {
			if sp.InstanceType == instanceType && sp.Zone == zone {
				return sp.Price
			}
		}
	}
	if info := ec2data.Lookup(instanceType); info != nil && info.OnDemandPrice > 0 {
		return info.OnDemandPrice
	}
	return 1e9
}

// fleetError is one override a fleet could not launch.
type fleetError struct {
	ov        override
	code, msg string
}

func (s *Server) launch(ov override, capacityType string, fleet url.Values) *Instance {
	lt := s.launchTemplates[ov.lt]
	now := s.clock()
	inst := &Instance{
		ID: s.id("i"), InstanceType: ov.instanceType, Zone: ov.zone, SubnetID: ov.subnet, ImageID: lt.Data.Get("ImageId"),
		LaunchTemplate: ov.lt, Lifecycle: capacityType, State: "running", LaunchTime: now,
		Tags: launchTags(lt, fleet, "instance"), ENITags: launchTags(lt, fleet, "network-interface"),
		SecurityGroups: launchSecurityGroups(lt.Data), visibleAt: now.Add(s.describeLag),
	}
	if capacityType == "spot" {
		inst.SpotRequestTags = launchTags(lt, fleet, "spot-instances-request")
	}
	inst.PrivateDNSName = "ip-10-0-" + strconv.Itoa(s.nextID/256) + "-" + strconv.Itoa(s.nextID%256) + "." + s.Region + ".compute.internal"
	s.instances = append(s.instances, inst)
	return inst
}

func (s *Server) describeInstances(x *xb, p url.Values) (int, string, string) {
	ids, fs := values(p, "InstanceId"), filters(p)
	var found []*Instance
	now := s.clock()
	visible := func(inst *Instance) bool { return !now.Before(inst.visibleAt) }
	for _, id := range ids {
		ok := false
		for _, inst := range s.instances {
			ok = ok || (inst.ID == id && visible(inst))
		}
		if !ok {
			return http.StatusBadRequest, "InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id)
		}
	}
	for _, inst := range s.instances {
		if !visible(inst) || (len(ids) > 0 && !contains(ids, inst.ID)) || !matches(fs, map[string]string{"instance-id": inst.ID, "instance-state-name": inst.State, "instance-type": inst.InstanceType}, inst.Tags) {
			continue
		}
		found = append(found, inst)
	}
	start, end, next := page(p, len(found), s.PageSize)
	x.open("reservationSet")
	for _, inst := range found[start:end] {
		x.open("item")
		x.elem("reservationId", "r-"+strings.TrimPrefix(inst.ID, "i-"))
		x.open("instancesSet")
		x.open("item")
		writeInstance(x, inst)
		x.close("item")
		x.close("instancesSet")
		x.close("item")
	}
	x.close("reservationSet")
	if next != "" {
		x.elem("nextToken", next)
	}
	return 0, "", ""
}

func writeInstance(x *xb, inst *Instance) {
	x.elem("instanceId", inst.ID)
	x.elem("imageId", inst.ImageID)
	x.elem("instanceType", inst.InstanceType)
	x.elem("subnetId", inst.SubnetID)
	x.elem("privateDnsName", inst.PrivateDNSName)
	x.elem("launchTime", inst.LaunchTime.UTC().Format("2006-01-02T15:04:05.000Z"))
	x.open("instanceState")
	x.elem("code", map[string]string{"pending": "0", "running": "16", "shutting-down": "32", "terminated": "48"}[inst.State])
	x.elem("name", inst.State)
	x.close("instanceState")
	x.open("placement")
	x.elem("availabilityZone", inst.Zone)
	x.close("placement")
	x.open("groupSet")
	for _, g := range inst.SecurityGroups {
		x.open("item")
		x.elem("groupId", g)
		x.close("item")
	}
	x.close("groupSet")
	if inst.Lifecycle == "spot" {
		x.elem("instanceLifecycle", "spot")
	}
	x.tags(inst.Tags)
}

func (s *Server) terminateInstances(x *xb, p url.Values) (int, string, string) {
	ids := values(p, "InstanceId")
	x.open("instancesSet")
	for _, id := range ids {
		for _, inst := range s.instances {
			if inst.ID != id {
				continue
			}
			prev := inst.State
			inst.State = "terminated"
			x.open("item")
			x.elem("instanceId", id)
			x.open("previousState")
			x.elem("name", prev)
			x.close("previousState")
			x.open("currentState")
			x.elem("name", "shutting-down")
			x.close("currentState")
			x.close("item")
		}
	}
	x.close("instancesSet")
	return 0, "", ""
}
