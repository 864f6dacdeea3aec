package v1

// GetWeight returns the pool's weight, 0 when unset (lowest priority).
func (in *NodePool) GetWeight() int32 {
	if in.Spec.Weight == nil {
		return 0
	}
	return *in.Spec.Weight
}
