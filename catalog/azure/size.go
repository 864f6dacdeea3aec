package azure

import (
	"regexp"
	"strings"
)

// Size is a VM size name taken apart by Azure's naming convention:
// [Family][Subfamily][vCPUs][-constrained vCPUs][additive features][_accelerator][_version].
type Size struct {
	Family      string // D, E, N…
	Subfamily   string // C in NC, S in DS
	CPUs        string
	Constrained string // the vCPUs left in a constrained-core size (M8-2ms → 2)
	Features    string // additive features: a (AMD), d (local disk), s (premium storage), p (Arm)…
	Accelerator string // A100, T4… ("" when the name has none)
	Version     string // v5 ("" for the first generation)
}

var sizePattern = regexp.MustCompile(`^([A-Z])([A-Z]{0,2})([0-9]+)(?:-([0-9]+))?([a-z]*)(?:_([A-Z][A-Za-z0-9]*?))?(?:_([vV][0-9]+))?(?:_Promo)?$`)

// ParseSize takes a VM size (with or without the Standard_ tier prefix) apart; ok is false for
// names outside the convention.
func ParseSize(name string) (Size, bool) {
	_, rest, found := strings.Cut(name, "_")
	if !found || (!strings.EqualFold(name[:len(name)-len(rest)-1], "standard") && !strings.EqualFold(name[:len(name)-len(rest)-1], "basic")) {
		rest = name
	}
	m := sizePattern.FindStringSubmatch(rest)
	if m == nil {
		return Size{}, false
	}
	return Size{Family: m[1], Subfamily: m[2], CPUs: m[3], Constrained: m[4], Features: m[5], Accelerator: m[6], Version: m[7]}, true
}

// Series is family, subfamily and additive features with the version: Ds_v5, NCads_v4, B_ms → Bms.
func (s Size) Series() string {
	series := s.Family + s.Subfamily + s.Features
	if s.Version != "" {
		series += "_" + s.Version
	}
	return series
}

// VersionNumber is the version without its v, "1" for names without one.
func (s Size) VersionNumber() string {
	if s.Version == "" {
		return "1"
	}
	return s.Version[1:]
}
