package state

import v1 "github.com/joist-dev/joist/api/v1"

// ClaimsByNodeName maps what a pod's status.nominatedNodeName may hold to the claim it means: the
// name of the claim's Node (status.nodeName), and the claim's own name. The two are the same only
// on clouds that name nodes after claims (KWOK); on EC2 the Node is named after the instance's
// private DNS name. After a manager restart the field is all that remembers a nomination, so
// in-flight pods are re-adopted by their claim through this map, not by a name match.
func ClaimsByNodeName(claims []v1.NodeClaim) map[string]string {
	out := make(map[string]string, 2*len(claims))
	for i := range claims {
		nc := &claims[i]
		out[nc.Name] = nc.Name
	}
	for i := range claims { // a node name wins over a claim that happens to bear the same name
		nc := &claims[i]
		if nc.Status.NodeName != "" {
			out[nc.Status.NodeName] = nc.Name
		}
	}
	return out
}
