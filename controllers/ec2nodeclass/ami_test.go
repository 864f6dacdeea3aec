package ec2nodeclass

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDeprecationIsComparedWithNow(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	img := func(id, created, deprecation string) candidate {
		i := ec2types.Image{ImageId: aws.String(id), Architecture: ec2types.ArchitectureValuesX8664, CreationDate: aws.String(created)}
		if deprecation != "" {
			i.DeprecationTime = aws.String(deprecation)
		}
		return candidate{image: i, variants: []string{"standard"}}
	}
	// Every EKS AMI carries a DeprecationTime years ahead: the newest one is not deprecated yet.
	amis := selectAMIs([]candidate{
		img("ami-old", "2026-01-01T00:00:00.000Z", "2028-01-01T00:00:00.000Z"),
		img("ami-new", "2026-11-01T00:00:00.000Z", "2028-11-01T00:00:00.000Z"),
	}, now)
	if len(amis) != 1 || amis[0].ID != "ami-new" || amis[0].Deprecated {
		t.Errorf("amis = %+v, want the newest, not deprecated", amis)
	}
	// A newer image whose deprecation time has passed loses to an older live one.
	amis = selectAMIs([]candidate{
		img("ami-live", "2026-01-01T00:00:00.000Z", ""),
		img("ami-dead", "2026-11-01T00:00:00.000Z", "2026-11-15T00:00:00.000Z"),
	}, now)
	if len(amis) != 1 || amis[0].ID != "ami-live" {
		t.Errorf("amis = %+v, want the live image", amis)
	}
	if amis := selectAMIs([]candidate{img("ami-dead", "2026-11-01T00:00:00.000Z", "2026-11-15T00:00:00.000Z")}, now); len(amis) != 1 || !amis[0].Deprecated {
		t.Errorf("only a deprecated image: %+v, want it, marked deprecated", amis)
	}
}
