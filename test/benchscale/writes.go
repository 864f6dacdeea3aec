package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// writeRequests reads apiserver_request_total's writes (every verb but reads and watches) summed by
// "VERB resource[/subresource] code": what each object kind costs in writes, and which were refused.
func writeRequests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	return requestTotals(ctx, cs, func(label func(string) string) string {
		switch label("verb") {
		case "", "GET", "LIST", "WATCH", "CONNECT":
			return ""
		}
		return requestKey(label) + " " + label("code")
	})
}

// requestKey is "VERB resource[/subresource]" of one apiserver_request_total series.
func requestKey(label func(string) string) string {
	key := label("verb") + " " + label("resource")
	if sub := label("subresource"); sub != "" {
		key += "/" + sub
	}
	return key
}

// requestTotals sums the apiserver's apiserver_request_total series by key(label), skipping the
// series whose key is "".
func requestTotals(ctx context.Context, cs kubernetes.Interface, key func(label func(name string) string) string) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading apiserver metrics: %w", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		label := func(name string) string {
			i := strings.Index(line, name+`="`)
			if i < 0 {
				return ""
			}
			v := line[i+len(name)+2:]
			return v[:strings.Index(v, `"`)]
		}
		k := key(label)
		if k == "" {
			continue
		}
		n, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		out[k] += n
	}
	return out, nil
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
