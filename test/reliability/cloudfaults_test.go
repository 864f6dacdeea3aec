package reliability

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/test/env"
)

// TestCloudFaults scales up and back down while 30% of cloud creates and terminations fail, some
// calls stall for a latency spike, and the first launched offering sells out mid-run: all pods must
// run, every node must go once the pods do, and the cloud API call rate stays bounded.
func TestCloudFaults(t *testing.T) {
	pods, spike := 100, 3*time.Second
	if long() {
		pods, spike = 500, 10*time.Second
	}
	port, err := env.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := newStack(t, "--kwok-error-rate=0.3", "--kwok-delete-error-rate=0.3", "--kwok-latency-spike-rate=0.05",
		"--kwok-latency-spike="+spike.String(), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false")
	s.setUp(ctx, time.Second)
	s.onlyCPU(ctx, "8") // many small nodes: tens of creates and terminations
	s.start()
	start := time.Now()
	deploys := deployments(pods)
	for _, d := range deploys {
		if err := s.kube.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	soldOut := sellOutFirstOffering(t, ctx, s)
	upAfter := s.waitRunning(ctx, pods, 10*time.Minute)
	inv, err := s.settle(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("after scale-up: %v", err)
	}
	var claims v1.NodeClaimList
	if err := s.kube.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		if o := nc.Labels[v1.LabelInstanceType] + ":" + nc.Labels[v1.LabelTopologyZone] + ":" + nc.Labels[v1.CapacityTypeLabelKey]; o == soldOut && nc.CreationTimestamp.After(start.Add(upAfter)) {
			t.Errorf("claim %s launched on %s after it sold out", nc.Name, soldOut)
		}
	}
	// Scale to zero: empty nodes are terminated through the failing Delete.
	for _, d := range deploys {
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To(int32(0))
		if err := s.kube.Patch(ctx, d, patch); err != nil {
			t.Fatal(err)
		}
	}
	downStart := time.Now()
	for {
		var left v1.NodeClaimList
		if err := s.kube.List(ctx, &left); err != nil {
			t.Fatal(err)
		}
		if len(left.Items) == 0 {
			break
		}
		if time.Since(downStart) > 10*time.Minute {
			t.Fatalf("%d NodeClaims left 10 minutes after scaling to zero", len(left.Items))
		}
		time.Sleep(time.Second)
	}
	downAfter := time.Since(downStart)
	elapsed := time.Since(start)
	calls, err := scrapeCloudCalls(port)
	if err != nil {
		t.Fatalf("reading the cloud call counter: %v", err)
	}
	total := 0.0
	var rows []string
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		total += calls[k]
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %.2f |", k, calls[k], calls[k]/elapsed.Seconds()))
	}
	rate := total / elapsed.Seconds()
	rows = append(rows, fmt.Sprintf("| **all** (%d pods up in %s, down in %s; %s sold out; peak %d claims) | %.0f | %.2f |",
		pods, upAfter.Round(time.Second), downAfter.Round(time.Second), soldOut, inv.claims, total, rate))
	report(t, "cloud faults (30% create and terminate failures, latency spikes, offering sold out)", "| method/outcome | calls | per second |\n|---|---|---|", rows)
	if calls["Create/error"] == 0 || calls["Delete/error"] == 0 {
		t.Errorf("faults were not injected: %v", calls)
	}
	if limit := 20.0; rate > limit {
		t.Errorf("cloud API calls %.1f/s over the run, want ≤ %.0f/s", rate, limit)
	}
}

// sellOutFirstOffering waits for the first launched claim and sells its offering out.
func sellOutFirstOffering(t *testing.T, ctx context.Context, s *stack) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var claims v1.NodeClaimList
		if err := s.kube.List(ctx, &claims); err != nil {
			t.Fatal(err)
		}
		for _, nc := range claims.Items {
			if it := nc.Labels[v1.LabelInstanceType]; it != "" {
				o := it + ":" + nc.Labels[v1.LabelTopologyZone] + ":" + nc.Labels[v1.CapacityTypeLabelKey]
				nodeClass := &kwokv1alpha1.KWOKNodeClass{}
				if err := s.kube.Get(ctx, client.ObjectKey{Name: "default"}, nodeClass); err != nil {
					t.Fatal(err)
				}
				patch := client.MergeFrom(nodeClass.DeepCopy())
				if nodeClass.Annotations == nil {
					nodeClass.Annotations = map[string]string{}
				}
				nodeClass.Annotations[kwok.SoldOutAnnotationKey] = o
				if err := s.kube.Patch(ctx, nodeClass, patch); err != nil {
					t.Fatal(err)
				}
				return o
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no claim launched within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrapeCloudCalls reads joist_kwok_cloud_api_calls_total from the manager's metrics endpoint.
func scrapeCloudCalls(port int) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "joist_kwok_cloud_api_calls_total{") {
			continue
		}
		labels := line[strings.Index(line, "{")+1 : strings.Index(line, "}")]
		var method, outcome string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "method":
				method = v
			case "outcome":
				outcome = v
			}
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(line[strings.Index(line, "}")+1:]), 64)
		if err != nil {
			return nil, err
		}
		out[method+"/"+outcome] = n
	}
	return out, sc.Err()
}
