package verify

import (
	"strconv"
	"strings"

	v1 "github.com/joist-dev/joist/api/v1"
)

// integerLabel finds an integer value for key that every requirement on key accepts.
func integerLabel(key string, reqs []v1.NodeSelectorRequirementWithMinValues) (string, bool) {
	const window = 1 << 12
	for i := 0; i < 2*window; i++ {
		n := i
		if i >= window {
			n = window - 1 - i // -1, -2, ...
		}
		x := strconv.Itoa(n)
		ok := true
		for _, r := range reqs {
			ok = ok && (r.Key != key || reqMatches(r, map[string]string{key: x}))
		}
		if ok {
			return x, true
		}
	}
	return "", false
}

// restrictedDomain: labels under kubernetes.io, k8s.io and karpenter.sh (but for node.kubernetes.io,
// node-restriction.kubernetes.io and kops.k8s.io) are never taken from requirements.
func restrictedDomain(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return false
		}
	}
	for _, d := range []string{"kubernetes.io", "k8s.io", "karpenter.sh"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}
