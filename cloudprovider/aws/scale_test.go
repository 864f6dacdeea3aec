package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

// 500 nodes, each checked for drift every 10 s and swept by garbage collection every 30 s, for
// ten minutes of a fake clock, against EC2's documented describe budget (a bucket of 100 refilled
// at 20 per second, shared by the account): the provider reads the cluster's instances with one
// paginated DescribeInstances per cache interval, never one per node.
func TestDescribeCallsStayWithinTheAccountBudgetAt500Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("500 nodes through the fake EC2: make test runs it, make test-unit (-short) does not")
	}
	const nodes = 500
	w := newWorld(t)
	w.aws.SetClock(w.clock.Now)
	w.apply(t, nodeClass("default"))
	nc := &awsv1.EC2NodeClass{}
	if err := w.kube.Get(context.Background(), clientKey("default"), nc); err != nil {
		t.Fatal(err)
	}
	w.aws.PageSize = 200 // three pages per listing
	w.aws.SetDescribeRateLimit(100, 20)
	var claims []*v1.NodeClaim
	for i := range nodes {
		zone := []string{"us-west-2a", "us-west-2b", "us-west-2c"}[i%3]
		id := w.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: zone, SubnetID: "subnet-00" + zone[len(zone)-1:], ImageID: fake.AL2023AMD64,
			SecurityGroups: []string{"sg-0node"}, LaunchTime: w.clock.Now(), Tags: map[string]string{
				"kubernetes.io/cluster/prod": "owned", "karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": fmt.Sprintf("n-%d", i)}})
		c := claim(fmt.Sprintf("n-%d", i))
		c.Status.ProviderID = "aws:///" + zone + "/" + id
		c.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: nc.Hash("Q0E="), awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion}
		c.CreationTimestamp = metav1.NewTime(w.clock.Now())
		claims = append(claims, c)
	}
	ctx := context.Background()
	before := len(w.aws.Calls("DescribeInstances"))
	const minutes = 10
	for tick := range minutes * 6 { // every 10 s
		for _, c := range claims {
			reason, err := w.provider.IsDrifted(ctx, c)
			if err != nil || reason != "" {
				t.Fatalf("tick %d: IsDrifted(%s) = %q, %v", tick, c.Name, reason, err)
			}
		}
		if tick%3 == 0 {
			list, err := w.provider.List(ctx)
			if err != nil || len(list) != nodes {
				t.Fatalf("tick %d: List = %d instances, %v", tick, len(list), err)
			}
		}
		w.clock.Step(10 * time.Second)
	}
	calls := len(w.aws.Calls("DescribeInstances")) - before
	perMinute := float64(calls) / minutes
	t.Logf("%d nodes: %d DescribeInstances calls in %d minutes (%.1f/min), %d throttled", nodes, calls, minutes, perMinute, w.aws.DescribeThrottled())
	if w.aws.DescribeThrottled() > 0 {
		t.Errorf("%d describe calls were throttled", w.aws.DescribeThrottled())
	}
	// One listing of 3 pages per 30 s interval is 6 calls a minute; the fake also counts the SDK's
	// own transparent retries of a page (measured 6–8 a minute in all). One call per node per
	// check would be 3,000 a minute; the budget refills 1,200.
	if perMinute > 10 {
		t.Errorf("%.1f DescribeInstances calls per minute for %d nodes, want at most 10 (one 3-page listing per 30 s)", perMinute, nodes)
	}
}
