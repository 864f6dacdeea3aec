package fake

// Launch faults the fake can inject into CreateFleet, each answered per override in the fleet's
// errorSet as EC2 does (or, for FailFleetsWithoutOverrides, as one error naming no override).

// ExhaustSubnet makes launches into the subnet fail with InsufficientFreeAddressesInSubnet.
func (s *Server) ExhaustSubnet(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exhaustedSubnets[id] = true
}

// SetSpotInstanceLimit caps the account's running spot instances (MaxSpotInstanceCountExceeded
// beyond it); a negative limit removes the cap.
func (s *Server) SetSpotInstanceLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotLimit = n
}

// RemoveSpotServiceLinkedRole makes the account one without the spot service-linked role that
// the caller may not create: every spot launch fails with
// AuthFailure.ServiceLinkedRoleCreationNotPermitted.
func (s *Server) RemoveSpotServiceLinkedRole() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noSpotSLR = true
}

// FailFleetsWithoutOverrides makes the next n fleets launch nothing and report one error with the
// code and no launchTemplateAndOverrides.
func (s *Server) FailFleetsWithoutOverrides(code string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bareFleetError, s.bareFleetErrors = code, n
}

// launchFault is the error launching one override meets, if any.
func (s *Server) launchFault(ov override, capacityType string) (code, msg string) {
	switch {
	case capacityType == "spot" && s.noSpotSLR:
		return "AuthFailure.ServiceLinkedRoleCreationNotPermitted", "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances."
	case s.exhaustedSubnets[ov.subnet]:
		return "InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '" + ov.subnet + "' to satisfy the requested number of instances."
	case capacityType == "spot" && s.spotLimit >= 0 && s.runningSpot() >= s.spotLimit:
		return "MaxSpotInstanceCountExceeded", "Max spot instance count exceeded"
	}
	return "", ""
}

func (s *Server) runningSpot() int {
	n := 0
	for _, inst := range s.instances {
		if inst.Lifecycle == "spot" && (inst.State == "running" || inst.State == "pending") {
			n++
		}
	}
	return n
}
