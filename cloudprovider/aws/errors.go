package aws

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/smithy-go"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// insufficientCapacityCodes are the CreateFleet error codes that mean an offering has no capacity
// now (as opposed to a configuration error).
var insufficientCapacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"InsufficientFreeAddressesInSubnet": true,
	"MaxSpotInstanceCountExceeded":      true,
	"UnfulfillableCapacity":             true,
	"VcpuLimitExceeded":                 true,
	"InsufficientCapacity":              true,
	"Unsupported":                       true,
	"InsufficientHostCapacity":          true,
	"SpotMaxPriceTooLow":                true,
	"ReservationCapacityExceeded":       true,
}

// spotSLRCode is CreateFleet's answer for spot in an account without the spot service-linked
// role when the caller may not create it.
const spotSLRCode = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"

// spotSLRFix is what the user reads (the claim's event) when spot is refused for want of the role.
const spotSLRFix = spotSLRCode + ": this account has no EC2 Spot service-linked role and the controller may not create it; " +
	"spot is skipped until it exists — create it once with `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` (docs/aws.md)"

// notFoundCodes mean the resource is gone.
var notFoundCodes = map[string]bool{
	"InvalidInstanceID.NotFound":                  true,
	"InvalidLaunchTemplateName.NotFoundException": true,
	"InvalidLaunchTemplateId.NotFound":            true,
}

// apiCode returns the AWS error code of err, or "".
func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool { return notFoundCodes[apiCode(err)] }

// Explain turns an SDK error into a message a platform engineer can act on: AWS error codes are
// quoted; an error without one means the API did not answer, which on a private cluster usually
// means a missing VPC endpoint.
func Explain(service string, err error) string {
	if code := apiCode(err); code != "" {
		return fmt.Sprintf("%s: %v", service, err)
	}
	return fmt.Sprintf("%s API unreachable (%v); a private cluster needs VPC endpoints for ec2, ssm and sts (see docs/aws.md)", service, err)
}

// unauthorizedCode is EC2's answer to a call the caller's IAM policy does not allow.
const unauthorizedCode = "UnauthorizedOperation"

// deniedPermission matches the decoded part of an authorization failure: "… is not authorized to
// perform: ec2:CreateFleet on resource: arn:aws:ec2:…:network-interface/* …".
var deniedPermission = regexp.MustCompile(`not authorized to perform: (\S+) on resource: (\S+)`)

// unauthorizedError is a launch EC2 refused for lack of IAM permission. Retrying cannot help until
// the controller's role changes, so it is a terminal error: the claim records it (Launched=False
// with this message) and waits for its launch timeout instead of calling EC2 again and again.
func unauthorizedError(what, message string) error {
	permission := "a permission of docs/aws.md's controller policy"
	if m := deniedPermission.FindStringSubmatch(message); m != nil {
		permission = m[1] + " on " + m[2]
	}
	return reconcile.TerminalError(fmt.Errorf("%s: the controller's IAM role is not allowed %s (UnauthorizedOperation); "+
		"grant it as docs/aws.md's controller policy does (`aws sts decode-authorization-message` decodes the rest): %s", what, permission, message))
}
