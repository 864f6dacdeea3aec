package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EC2NodeClass; Ready rolls them up. The NodeClass controller owns them all.
const (
	ConditionTypeSubnetsReady         = "SubnetsReady"
	ConditionTypeSecurityGroupsReady  = "SecurityGroupsReady"
	ConditionTypeAMIsReady            = "AMIsReady"
	ConditionTypeInstanceProfileReady = "InstanceProfileReady"
	ConditionTypeValidationSucceeded  = "ValidationSucceeded"
	ConditionTypeReady                = "Ready"
)

// readyConditions make up the Ready roll-up.
var readyConditions = []string{
	ConditionTypeSubnetsReady, ConditionTypeSecurityGroupsReady, ConditionTypeAMIsReady,
	ConditionTypeInstanceProfileReady, ConditionTypeValidationSucceeded,
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone of the subnet.
	// +required
	Zone string `json:"zone"`
	// ZoneID of the subnet.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved image with the node requirements it serves (architecture, and for accelerated
// images the GPU requirements).
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Deprecated AMIs are used only when nothing else is selected.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type meets to boot this AMI.
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// EC2NodeClassStatus is what the NodeClass controller resolved.
type EC2NodeClassStatus struct {
	// Subnets selected by subnetSelectorTerms.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups selected by securityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs selected by amiSelectorTerms.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile instances launch with.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions: SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady,
	// ValidationSucceeded and their roll-up Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IsTrue reports whether condition t is True.
func (in *EC2NodeClass) IsTrue(t string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, t)
}

// GetCondition returns condition t or nil.
func (in *EC2NodeClass) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// SetCondition sets condition t and recomputes Ready: True when every part is True, otherwise the
// first part that is not, with its reason and message.
func (in *EC2NodeClass) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	})
	ready := metav1.Condition{Type: ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: in.Generation}
	for _, part := range readyConditions {
		c := in.GetCondition(part)
		if c == nil {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "AwaitingReconciliation", part+" has not been reconciled"
			break
		}
		if c.Status != metav1.ConditionTrue {
			ready.Status, ready.Reason, ready.Message = c.Status, c.Reason, part+": "+c.Message
			break
		}
	}
	meta.SetStatusCondition(&in.Status.Conditions, ready)
}
