package state

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestClaimsByNodeName(t *testing.T) {
	claim := func(name, node string) v1.NodeClaim {
		nc := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Status.NodeName = node
		return nc
	}
	got := ClaimsByNodeName([]v1.NodeClaim{
		claim("default-abc12", "ip-10-0-1-17.us-west-2.compute.internal"), // EC2: node named after the instance
		claim("kwok-xyz", "kwok-xyz"),                                     // KWOK: node named after the claim
		claim("default-pending", ""),                                      // not registered yet
	})
	for nominated, want := range map[string]string{
		"ip-10-0-1-17.us-west-2.compute.internal": "default-abc12",
		"default-abc12":                          "default-abc12",
		"kwok-xyz":                               "kwok-xyz",
		"default-pending":                        "default-pending",
		"ip-10-0-9-9.us-west-2.compute.internal": "",
	} {
		if got[nominated] != want {
			t.Errorf("claim of nominated node %q = %q, want %q", nominated, got[nominated], want)
		}
	}
}
