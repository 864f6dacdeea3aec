package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Account is the fake's AWS account id.
const Account = "123456789012"

// Principal is the caller the fake's authorization errors name.
const Principal = "arn:aws:sts::" + Account + ":assumed-role/JoistController/joist"

// SetPolicy makes the fake authorize every call against an IAM identity policy (nil: allow all),
// as IAM does for the controller's role: each action on each resource it reads, changes or
// creates, with the request's tags, the resource's tags and the tag keys as condition keys.
func (s *Server) SetPolicy(p *Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// Denials are the authorization failures the fake answered, as "action on resource".
func (s *Server) Denials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.denials...)
}

// authorize evaluates the requests in order and returns the first denied one's message ("" when
// all are allowed or no policy is set).
func (s *Server) authorize(reqs []AuthzRequest) string {
	if s.policy == nil {
		return ""
	}
	for _, r := range reqs {
		if r.Context == nil {
			r.Context = map[string][]string{}
		}
		r.Context["aws:RequestedRegion"] = []string{s.Region}
		if !s.policy.Allows(r) {
			s.denials = append(s.denials, r.Action+" on "+r.Resource)
			return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
				Principal, r.Action, r.Resource, r.Action)
		}
	}
	return ""
}

// writeUnauthorized answers as EC2 does (403, UnauthorizedOperation, the decoded reason in the
// message as EC2 now gives it, followed by the encoded one).
func writeUnauthorized(w http.ResponseWriter, msg string) {
	writeEC2Error(w, http.StatusForbidden, "UnauthorizedOperation", unauthorizedMessage(msg))
}

func unauthorizedMessage(msg string) string {
	return "You are not authorized to perform this operation. " + msg + ". Encoded authorization failure message: ZmFrZQ"
}

func (s *Server) ec2ARN(resource string) string {
	return "arn:aws:ec2:" + s.Region + ":" + Account + ":" + resource
}

// tagContext adds aws:RequestTag/<k> and aws:TagKeys for request tags, aws:ResourceTag/<k> for the
// resource's tags, and extra keys.
func tagContext(requestTags, resourceTags map[string]string, extra ...string) map[string][]string {
	ctx := map[string][]string{}
	if len(requestTags) > 0 {
		var keys []string
		for k, v := range requestTags {
			ctx["aws:RequestTag/"+k] = []string{v}
			keys = append(keys, k)
		}
		ctx["aws:TagKeys"] = keys
	}
	for k, v := range resourceTags {
		ctx["aws:ResourceTag/"+k] = []string{v}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		ctx[extra[i]] = []string{extra[i+1]}
	}
	return ctx
}

// created is the authorization of creating a resource with tags: the action itself and, when it
// carries tags, ec2:CreateTags with ec2:CreateAction (tag-on-create).
func (s *Server) created(action, resource string, tags map[string]string) []AuthzRequest {
	out := []AuthzRequest{{Action: "ec2:" + action, Resource: s.ec2ARN(resource), Context: tagContext(tags, nil)}}
	if len(tags) > 0 {
		out = append(out, AuthzRequest{Action: "ec2:CreateTags", Resource: s.ec2ARN(resource), Context: tagContext(tags, nil, "ec2:CreateAction", action)})
	}
	return out
}

// ec2Authz is what an EC2 call needs before the fake serves it. CreateFleet's launch itself (the
// instance, its volumes, network interface, spot request, image, subnet, security groups and the
// role passed) is authorized per override in createFleet, failing that override as EC2 does.
func (s *Server) ec2Authz(action string, p url.Values) []AuthzRequest {
	switch {
	case strings.HasPrefix(action, "Describe"):
		return []AuthzRequest{{Action: "ec2:" + action, Resource: "*"}}
	case action == "CreateLaunchTemplate":
		return s.created(action, "launch-template/*", tagSpecs(p, "launch-template"))
	case action == "DeleteLaunchTemplate":
		if lt := s.launchTemplates[p.Get("LaunchTemplateName")]; lt != nil {
			return []AuthzRequest{{Action: "ec2:DeleteLaunchTemplate", Resource: s.ec2ARN("launch-template/" + lt.ID), Context: tagContext(nil, lt.Tags)}}
		}
	case action == "CreateFleet":
		reqs := s.created(action, "fleet/*", tagSpecs(p, "fleet"))
		for _, i := range indices(p, "LaunchTemplateConfigs") {
			if lt := s.launchTemplates[item(p, "LaunchTemplateConfigs", i).Get("LaunchTemplateSpecification.LaunchTemplateName")]; lt != nil {
				reqs = append(reqs, AuthzRequest{Action: "ec2:CreateFleet", Resource: s.ec2ARN("launch-template/" + lt.ID), Context: tagContext(nil, lt.Tags)})
			}
		}
		return reqs
	case action == "TerminateInstances":
		var reqs []AuthzRequest
		for _, id := range values(p, "InstanceId") {
			if inst := s.instance(id); inst != nil {
				reqs = append(reqs, AuthzRequest{Action: "ec2:TerminateInstances", Resource: s.ec2ARN("instance/" + id), Context: tagContext(nil, inst.Tags)})
			}
		}
		return reqs
	case action == "CreateTags":
		tags := map[string]string{}
		for _, i := range indices(p, "Tag") {
			t := item(p, "Tag", i)
			tags[t.Get("Key")] = t.Get("Value")
		}
		var reqs []AuthzRequest
		for _, id := range values(p, "ResourceId") {
			if inst := s.instance(id); inst != nil {
				reqs = append(reqs, AuthzRequest{Action: "ec2:CreateTags", Resource: s.ec2ARN("instance/" + id), Context: tagContext(tags, inst.Tags)})
			}
		}
		return reqs
	}
	return nil
}

// launchAuthz is what launching one override of a fleet needs. An instant fleet launches through
// RunInstances on the caller's behalf, so each launch resource is checked for ec2:CreateFleet and
// ec2:RunInstances (Karpenter's published policy grants both).
func (s *Server) launchAuthz(lt *LaunchTemplate, ov override, capacityType string, fleet url.Values) []AuthzRequest {
	var reqs []AuthzRequest
	both := func(resource string, ctx map[string][]string) {
		for _, a := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
			reqs = append(reqs, AuthzRequest{Action: a, Resource: resource, Context: ctx})
		}
	}
	if img := s.image(lt.Data.Get("ImageId")); img != nil {
		both("arn:aws:ec2:"+s.Region+"::image/"+img.ID, tagContext(nil, img.Tags))
	}
	for _, sn := range s.subnets {
		if sn.ID == ov.subnet {
			both(s.ec2ARN("subnet/"+sn.ID), tagContext(nil, sn.Tags))
		}
	}
	for _, id := range launchSecurityGroups(lt.Data) {
		for _, sg := range s.securityGroups {
			if sg.ID == id {
				both(s.ec2ARN("security-group/"+id), tagContext(nil, sg.Tags))
			}
		}
	}
	createdTypes := []string{"instance", "volume", "network-interface"}
	if capacityType == "spot" {
		createdTypes = append(createdTypes, "spot-instances-request")
	}
	for _, rt := range createdTypes {
		tags := launchTags(lt, fleet, rt)
		both(s.ec2ARN(rt+"/*"), tagContext(tags, nil))
		if len(tags) > 0 {
			reqs = append(reqs, AuthzRequest{Action: "ec2:CreateTags", Resource: s.ec2ARN(rt + "/*"), Context: tagContext(tags, nil, "ec2:CreateAction", "CreateFleet")})
		}
	}
	if profile := s.profiles[lt.Data.Get("IamInstanceProfile.Name")]; profile != nil {
		for _, role := range profile.Roles {
			reqs = append(reqs, AuthzRequest{Action: "iam:PassRole", Resource: "arn:aws:iam::" + Account + ":role/" + role,
				Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
		}
	}
	return reqs
}

// launchTags are the tags a launched resource of a type gets: the launch template's
// TagSpecifications for it, overridden by the fleet request's.
func launchTags(lt *LaunchTemplate, fleet url.Values, resourceType string) map[string]string {
	tags := tagSpecs(lt.Data, resourceType)
	for k, v := range tagSpecs(fleet, resourceType) {
		tags[k] = v
	}
	return tags
}

func launchSecurityGroups(data url.Values) []string {
	if sgs := values(data, "SecurityGroupId"); len(sgs) > 0 {
		return sgs
	}
	return values(data, "NetworkInterface.1.SecurityGroupId")
}

func (s *Server) instance(id string) *Instance {
	for _, inst := range s.instances {
		if inst.ID == id {
			return inst
		}
	}
	return nil
}

// jsonAuthz is what an SSM, SQS or Pricing call needs.
func (s *Server) jsonAuthz(service, action string, in map[string]any) []AuthzRequest {
	switch service {
	case "ssm":
		name := str(in, "Name")
		account := Account
		if strings.HasPrefix(name, "/aws/service/") {
			account = ""
		}
		return []AuthzRequest{{Action: "ssm:" + action, Resource: "arn:aws:ssm:" + s.Region + ":" + account + ":parameter" + name}}
	case "sqs":
		q := str(in, "QueueName")
		if q == "" {
			q = s.queueName(str(in, "QueueUrl"))
		}
		return []AuthzRequest{{Action: "sqs:" + action, Resource: "arn:aws:sqs:" + s.Region + ":" + Account + ":" + q}}
	case "pricing":
		return []AuthzRequest{{Action: "pricing:" + action, Resource: "*"}}
	}
	return nil
}

// iamAuthz is what an IAM instance-profile call needs.
func (s *Server) iamAuthz(action string, p url.Values) []AuthzRequest {
	name := p.Get("InstanceProfileName")
	arn := "arn:aws:iam::" + Account + ":instance-profile/" + name
	var resourceTags map[string]string
	if profile := s.profiles[name]; profile != nil {
		resourceTags = profile.Tags
	}
	requestTags := map[string]string{}
	for _, i := range indices(p, "Tags.member") {
		t := item(p, "Tags.member", i)
		requestTags[t.Get("Key")] = t.Get("Value")
	}
	return []AuthzRequest{{Action: "iam:" + action, Resource: arn, Context: tagContext(requestTags, resourceTags)}}
}
