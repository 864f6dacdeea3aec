package aws

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// amiDrifted reports whether the image a claim's instance runs is no longer the one its
// EC2NodeClass resolves for the claim's instance type: unselected, or selected only for other
// types (a GPU node left on the standard image, an m5 on the NVIDIA one), or replaced by a newer
// image for the type.
func amiDrifted(nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, imageID string) bool {
	if !selectedAMI(nc, imageID) {
		return true
	}
	if claim.Labels[corev1.LabelInstanceTypeStable] == "" {
		return false // launched before Joist labelled claims: only selection can be judged
	}
	for _, ami := range nc.Status.AMIs { // best first: the first serving the type is what a launch picks
		if amiServes(ami, claim.Labels) {
			return ami.ID != imageID
		}
	}
	return true
}

// amiServes reports whether an instance type with labels meets the AMI's requirements.
func amiServes(ami awsv1.AMI, labels map[string]string) bool {
	for _, r := range ami.Requirements {
		v, has := labels[r.Key]
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !has || !contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if has && contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpExists:
			if !has {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			if has {
				return false
			}
		}
	}
	return true
}
