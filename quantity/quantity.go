// Package quantity bounds resource quantities before any arithmetic on them. apimachinery's Quantity
// is arbitrary precision: parsing "1e-9999999", or comparing, adding or converting "1e9999999", takes
// time and memory that grow with the written exponent (seconds at e7, unbounded beyond). The
// kube-apiserver stores such a quantity in a pod's requests, so one tenant pod could stall every
// solve; a catalog or simulate file could stall whoever loads it. No resource of any node needs more
// than a handful of digits or a magnitude past 1e30, so beyond that a quantity is refused by name.
package quantity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// MaxLength bounds a quantity's text.
	MaxLength = 64
	// MaxExponent bounds a quantity's written exponent and its magnitude (10^MaxExponent).
	MaxExponent = 30
)

// fix is the hint every refusal ends with.
const fix = `write e.g. "4", 500m, 8Gi`

// CheckText says why a quantity's text is refused before parsing, or "" when it is not. Text that is
// no quantity at all passes: resource.ParseQuantity reports its syntax.
func CheckText(text string) string {
	if len(text) > MaxLength {
		return fmt.Sprintf("is longer than %d characters; %s", MaxLength, fix)
	}
	i := strings.IndexAny(text, "eE")
	if i < 0 || i == len(text)-1 {
		return "" // no exponent, or the E (exa) suffix
	}
	exp, err := strconv.Atoi(text[i+1:])
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "" // not an exponent
	}
	if err != nil || exp > MaxExponent || exp < -MaxExponent {
		return fmt.Sprintf("has an exponent beyond e±%d; %s", MaxExponent, fix)
	}
	return ""
}

// Check says why a parsed quantity is refused (callers add how to fix it), or "" when arithmetic on
// it is cheap: its magnitude is at most 10^MaxExponent. It reads the quantity approximately, which
// costs the same whatever the exponent.
func Check(q resource.Quantity) string {
	if f := math.Abs(q.AsApproximateFloat64()); f > math.Pow10(MaxExponent) || math.IsNaN(f) {
		return fmt.Sprintf("is beyond 1e%d, more than any node has", MaxExponent)
	}
	return ""
}

// CheckList is Check over a resource list: the first refused name in name order and why, or "".
func CheckList[N ~string](list map[N]resource.Quantity) (N, string) {
	var bad N
	why := ""
	for n, q := range list {
		if msg := Check(q); msg != "" && (why == "" || n < bad) {
			bad, why = n, msg
		}
	}
	return bad, why
}
