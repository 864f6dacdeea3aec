package v1

import "strings"

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
