package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/test/env"
)

// writeRequests reads apiserver_request_total's writes (every verb but reads and watches) summed by
// "VERB resource[/subresource] code": what each object kind costs in writes, and which were refused.
func writeRequests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	return env.ApiserverRequests(ctx, cs, func(labels map[string]string) string {
		switch labels["verb"] {
		case "", "GET", "LIST", "WATCH", "CONNECT":
			return ""
		}
		return requestKey(labels) + " " + labels["code"]
	})
}

// requestKey is "VERB resource[/subresource]" of one apiserver_request_total series.
func requestKey(labels map[string]string) string {
	key := labels["verb"] + " " + labels["resource"]
	if sub := labels["subresource"]; sub != "" {
		key += "/" + sub
	}
	return key
}

// writesSince formats the writes made since before, largest first.
func writesSince(before, after map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if n := after[k] - before[k]; n >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, n))
		}
	}
	return "writes by resource and code: " + strings.Join(parts, ", ")
}
