package fake

import (
	"fmt"
	"strconv"
	"time"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

// AddSubnet adds a subnet.
func (s *Server) AddSubnet(sn Subnet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn.AvailableIPs == 0 {
		sn.AvailableIPs = 4000
	}
	s.subnets = append(s.subnets, &sn)
}

// RemoveSubnet deletes a subnet (as if it were deleted or untagged).
func (s *Server) RemoveSubnet(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.subnets[:0]
	for _, sn := range s.subnets {
		if sn.ID != id {
			out = append(out, sn)
		}
	}
	s.subnets = out
}

// AddSecurityGroup adds a security group.
func (s *Server) AddSecurityGroup(sg SecurityGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.securityGroups = append(s.securityGroups, &sg)
}

// RemoveSecurityGroup deletes a security group.
func (s *Server) RemoveSecurityGroup(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.securityGroups[:0]
	for _, sg := range s.securityGroups {
		if sg.ID != id {
			out = append(out, sg)
		}
	}
	s.securityGroups = out
}

// AddInstanceType offers an embedded instance type in zones, as New does for its types.
func (s *Server) AddInstanceType(name string, zones ...string) {
	info := ec2data.Lookup(name)
	if info == nil {
		panic(fmt.Sprintf("fake: %s is not in the embedded EC2 data", name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.typeZones[name]; !ok {
		s.instanceTypes = append(s.instanceTypes, info)
	}
	s.typeZones[name] = zones
}

// AddImage adds an AMI.
func (s *Server) AddImage(img Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images = append(s.images, &img)
}

// SetSSMParameter sets an SSM parameter.
func (s *Server) SetSSMParameter(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ssm[name] = value
}

// SetSpotPrice sets a type's spot price in a zone.
func (s *Server) SetSpotPrice(instanceType, zone string, price float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotPrices = append(s.spotPrices, SpotPrice{InstanceType: instanceType, Zone: zone, Price: price})
}

// SetCapacity limits a pool to n more launches (0: exhausted).
func (s *Server) SetCapacity(p Pool, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pools[p] = n
}

// Throttle answers the next n calls of action with a throttling error.
func (s *Server) Throttle(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle[action] = n
}

// AddProduct adds a Pricing API price-list document for an on-demand Linux price.
func (s *Server) AddProduct(instanceType string, usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.products = append(s.products, `{"product":{"attributes":{"instanceType":"`+instanceType+`","operatingSystem":"Linux"}},"terms":{"OnDemand":{"A.B":{"priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"`+strconv.FormatFloat(usd, 'f', 6, 64)+`"}}}}}}}`)
}

// CreateQueue creates an SQS queue.
func (s *Server) CreateQueue(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		s.queues[name] = nil
	}
}

// SendMessage enqueues a message body.
func (s *Server) SendMessage(queue, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.id("msg")
	s.queues[queue] = append(s.queues[queue], &message{id: id, body: body, receipt: "rh-" + id})
}

// QueueLength is how many messages are left in a queue.
func (s *Server) QueueLength(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[queue])
}

// Instances returns copies of every instance.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.instances))
	for _, i := range s.instances {
		out = append(out, *i)
	}
	return out
}

// AddInstance adds an instance launched outside Joist (or leaked by it).
func (s *Server) AddInstance(inst Instance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst.ID == "" {
		inst.ID = s.id("i")
	}
	if inst.State == "" {
		inst.State = "running"
	}
	if inst.LaunchTime.IsZero() {
		inst.LaunchTime = s.clock()
	}
	s.instances = append(s.instances, &inst)
	return inst.ID
}

// TerminateOutOfBand terminates an instance as the console or a spot reclaim would.
func (s *Server) TerminateOutOfBand(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.instances {
		if i.ID == id {
			i.State = "terminated"
		}
	}
}

// LaunchTemplates returns copies of the stored launch templates.
func (s *Server) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LaunchTemplate
	for _, lt := range s.launchTemplates {
		out = append(out, *lt)
	}
	return out
}

// Calls returns the requests served for an action ("" for all).
func (s *Server) Calls(action string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// SetClock replaces the fake's clock (instance launch times).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// SetDescribeLag makes DescribeInstances eventually consistent: an instance CreateFleet launches
// is missing from its answers (by id: InvalidInstanceID.NotFound; by filter: left out) for d.
func (s *Server) SetDescribeLag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.describeLag = d
}
