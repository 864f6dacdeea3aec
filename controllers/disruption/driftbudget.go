package disruption

// driftTurn orders this pass's drifted nodes (already sorted cheapest first) so that evaluation
// resumes after the node the previous pass evaluated last, and keeps at most limit of them (limit <= 0:
// all). Each evaluation is a whole solve; with many drifted nodes whose pods cannot be placed, trying
// every one every pass would cost one solve per node per pass. Rotating keeps every node's turn.
func driftTurn(drifted []*member, last string, limit int) []*member {
	start := 0
	for i, m := range drifted {
		if m.claim.Name == last {
			start = i + 1
			break
		}
	}
	out := make([]*member, 0, len(drifted))
	for i := range drifted {
		out = append(out, drifted[(start+i)%len(drifted)])
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
