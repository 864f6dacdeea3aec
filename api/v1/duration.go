package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the literal that disables a NillableDuration.
const Never = "Never"

// NillableDuration is a duration that may also be "Never". Its zero value is "unset": fields of this
// type are tagged omitzero, so a Go client that leaves them alone gets the apiserver's default.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
type NillableDuration struct {
	Duration *time.Duration `json:"-"`
	// Never is true for the explicit "Never".
	Never bool `json:"-"`
}

// MustParseNillableDuration parses s ("Never" or a Go duration) and panics on error; for tests and defaults.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses "Never" or a Go duration string.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{Never: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return NillableDuration{Duration: &d}, nil
}

// IsNever reports whether the duration is disabled (explicitly, or unset and so without a limit).
func (d NillableDuration) IsNever() bool { return d.Never || d.Duration == nil }

// IsZero reports whether the duration is unset; encoding/json's omitzero consults it.
func (d NillableDuration) IsZero() bool { return d.Duration == nil && !d.Never }

func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// MarshalJSON writes "Never" or the duration string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads "Never" or a duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured lets the apimachinery unstructured converter handle the type as a string.
func (d NillableDuration) ToUnstructured() interface{} { return d.String() }
