package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// EC2NodeClassHashVersion changes whenever Hash would change for an unchanged spec, so that claims
// hashed by an older build are not reported drifted.
const EC2NodeClassHashVersion = "v1"

// AMIFamily is the spec's amiFamily, or the alias's family when only an alias term is given.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil && *in.Spec.AMIFamily != "" {
		return *in.Spec.AMIFamily
	}
	if alias := in.Alias(); alias != nil {
		return alias.Family
	}
	return AMIFamilyCustom
}

// AMIAlias is a parsed alias term.
type AMIAlias struct {
	// Family is the AMI family (AL2023, Bottlerocket…).
	Family string
	// Version is "latest" or a pinned release (v20240625, v1.20.0).
	Version string
}

var aliasFamilies = map[string]string{
	"al2": AMIFamilyAL2, "al2023": AMIFamilyAL2023, "bottlerocket": AMIFamilyBottlerocket,
	"windows2019": AMIFamilyWindows2019, "windows2022": AMIFamilyWindows2022, "windows2025": AMIFamilyWindows2025,
}

// Alias returns the alias term parsed, or nil when there is none.
func (in *EC2NodeClass) Alias() *AMIAlias {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		family, version, _ := strings.Cut(term.Alias, "@")
		return &AMIAlias{Family: aliasFamilies[strings.ToLower(family)], Version: version}
	}
	return nil
}

// InstanceProfileName is the instance profile instances launch with: spec.instanceProfile, or
// the one resolved for spec.role.
func (in *EC2NodeClass) InstanceProfileName() string {
	if in.Spec.InstanceProfile != nil {
		return *in.Spec.InstanceProfile
	}
	return in.Status.InstanceProfile
}

// Hash is the NodeClass's static hash: every field that shapes an instance at launch, except the
// selector terms (whose resolved results are compared separately, so that re-tagging a subnet
// that still selects the same one is no drift). amiFamily is hashed as resolved, so setting it to
// what the alias implies is no drift either.
func (in *EC2NodeClass) Hash() string {
	spec := in.Spec.DeepCopy()
	spec.SubnetSelectorTerms, spec.SecurityGroupSelectorTerms, spec.AMISelectorTerms = nil, nil, nil
	family := in.AMIFamily()
	spec.AMIFamily = &family
	data, err := json.Marshal(spec) // map keys are sorted: stable
	if err != nil {
		panic(err) // a spec of plain data always marshals
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
