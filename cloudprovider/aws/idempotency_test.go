package aws_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

func offeringOf(c *v1.NodeClaim) cloudprovider.UnavailableOffering {
	return cloudprovider.UnavailableOffering{InstanceType: c.Labels[v1.LabelInstanceType], Zone: c.Labels[v1.LabelTopologyZone], CapacityType: c.Labels[v1.CapacityTypeLabelKey]}
}

func tokens(calls []fake.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Params.Get("ClientToken"))
	}
	return out
}

func liveInstances(w *world) int {
	n := 0
	for _, inst := range w.aws.Instances() {
		if inst.State == "running" {
			n++
		}
	}
	return n
}

// The claim's status write fails after CreateFleet launched, and DescribeInstances does not show
// the instance yet: the retried Create re-sends the same request with the same ClientToken and
// EC2 answers with the first fleet's instance.
func TestRetriedCreateWhileDescribeLagsLaunchesOneInstance(t *testing.T) {
	w := newWorld(t)
	w.aws.SetClock(w.clock.Now)
	w.aws.SetDescribeLag(time.Minute)
	w.apply(t, nodeClass("default"))
	nc := claim("lost-status", req(v1.LabelInstanceType, "In", "m5.large", "c5.large"), req(v1.CapacityTypeLabelKey, "In", "on-demand"))
	nc.UID = types.UID("6f1c2a4e-0000-4000-8000-000000000001")
	ctx := context.Background()
	first, err := w.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// Something in between marks the first choice unavailable: a freshly built request would differ.
	w.unavailable.MarkUnavailable(offeringOf(first))
	second, err := w.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if second.Status.ProviderID != first.Status.ProviderID || liveInstances(w) != 1 {
		t.Errorf("second Create launched %s after %s; %d instances running, want 1", second.Status.ProviderID, first.Status.ProviderID, liveInstances(w))
	}
	calls := w.aws.Calls("CreateFleet")
	if len(calls) != 2 || calls[0].Params.Get("ClientToken") == "" || calls[1].Params.Get("ClientToken") != calls[0].Params.Get("ClientToken") {
		t.Errorf("CreateFleet calls %d, tokens %q", len(calls), tokens(calls))
	}
}

// A restarted controller (nothing remembered) while DescribeInstances lags: the request it builds
// is the same, so is the ClientToken derived from the claim's UID and the request, and EC2 answers
// with the first instance.
func TestRestartedCreateWhileDescribeLagsLaunchesOneInstance(t *testing.T) {
	w := newWorld(t)
	w.aws.SetClock(w.clock.Now)
	w.aws.SetDescribeLag(time.Minute)
	w.apply(t, nodeClass("default"))
	nc := claim("restart", req(v1.LabelInstanceType, "In", "m5.large"), req(v1.CapacityTypeLabelKey, "In", "on-demand"))
	nc.UID = types.UID("6f1c2a4e-0000-4000-8000-000000000002")
	ctx := context.Background()
	first, err := w.provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	restarted := awsprovider.New(w.kube, w.clients, w.unavailable, w.clock, awsprovider.Options{
		ClusterName: cluster, ClusterEndpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", ClusterCABundle: "Q0E=",
	})
	if err := restarted.Prices().Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := restarted.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if second.Status.ProviderID != first.Status.ProviderID || liveInstances(w) != 1 {
		t.Errorf("restarted Create launched %s after %s; %d instances running, want 1", second.Status.ProviderID, first.Status.ProviderID, liveInstances(w))
	}
	// Another claim gets a token of its own, and an instance of its own.
	other := claim("restart-2", req(v1.LabelInstanceType, "In", "m5.large"), req(v1.CapacityTypeLabelKey, "In", "on-demand"))
	other.UID = types.UID("6f1c2a4e-0000-4000-8000-000000000003")
	if _, err := restarted.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if liveInstances(w) != 2 {
		t.Errorf("%d instances running after a second claim, want 2", liveInstances(w))
	}
	// Once the lag has passed, Create finds the instance by its tags and sends nothing.
	w.clock.Step(2 * time.Minute)
	fleets := len(w.aws.Calls("CreateFleet"))
	if again, err := restarted.Create(ctx, nc); err != nil || again.Status.ProviderID != first.Status.ProviderID || len(w.aws.Calls("CreateFleet")) != fleets {
		t.Errorf("Create after the lag = %v, %v; CreateFleet calls %d → %d", again, err, fleets, len(w.aws.Calls("CreateFleet")))
	}
}
