package aws

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"
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
