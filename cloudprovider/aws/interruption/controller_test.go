package interruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/cloudprovider/aws/interruption"
)

func event(source, detailType, detail string) string {
	return fmt.Sprintf(`{"version":"0","id":"7d2c","detail-type":%q,"source":%q,"account":"123456789012","time":"2026-12-01T10:00:00Z","region":"us-west-2","resources":[],"detail":%s}`, detailType, source, detail)
}

func spot(id string) string {
	return event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"`+id+`","instance-action":"terminate"}`)
}

func rebalance(id string) string {
	return event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"`+id+`"}`)
}

func stateChange(id, state string) string {
	return event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"`+id+`","state":"`+state+`"}`)
}

func scheduled(id string) string {
	return event("aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[{"entityValue":"`+id+`"}]}`)
}

func TestParseEachKind(t *testing.T) {
	for body, want := range map[string]interruption.Kind{
		spot("i-1"): interruption.KindSpotInterruption, rebalance("i-1"): interruption.KindRebalanceRecommendation,
		stateChange("i-1", "stopping"): interruption.KindStateChange, scheduled("i-1"): interruption.KindScheduledChange,
		event("aws.health", "AWS Health Event", `{"service":"RDS","eventTypeCategory":"scheduledChange"}`): interruption.KindNoop,
		`not json`: interruption.KindUnparseable,
	} {
		m, _ := interruption.Parse(body)
		if m.Kind != want {
			t.Errorf("Parse(%.60s…) = %s, want %s", body, m.Kind, want)
		}
		if want != interruption.KindNoop && want != interruption.KindUnparseable && (len(m.InstanceIDs) != 1 || m.InstanceIDs[0] != "i-1") {
			t.Errorf("Parse(%.60s…) instances = %v", body, m.InstanceIDs)
		}
	}
}

func TestInterruptionMessages(t *testing.T) {
	s := fake.NewStandard("prod")
	defer s.Close()
	ctx := context.Background()
	clients, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = v1.AddToScheme(scheme)
	var objs []client.Object
	for i, name := range []string{"spot", "rebalance", "stopping", "running", "retired"} {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "us-west-2a", v1.CapacityTypeLabelKey: "spot"}}}
		nc.Status.ProviderID = fmt.Sprintf("aws:///us-west-2a/i-%d", i)
		objs = append(objs, nc)
	}
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	unavailable := cloudprovider.NewUnavailableOfferings(clocktesting.NewFakeClock(time.Now()), 0)
	c := interruption.New(kube, clients.SQS, unavailable, events.NewFakeRecorder(100), interruption.Options{Queue: "joist-interruption", WaitTime: time.Second})
	for _, body := range []string{spot("i-0"), rebalance("i-1"), stateChange("i-2", "stopping"), stateChange("i-3", "running"), scheduled("i-4"), "{garbage", spot("i-99")} {
		s.SendMessage("joist-interruption", body)
	}
	handled := 0
	for handled < 7 {
		n, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		handled += n
	}
	if handled != 7 || s.QueueLength("joist-interruption") != 0 {
		t.Errorf("handled %d messages, %d left; want all 7 handled and deleted (the unparseable one too)", handled, s.QueueLength("joist-interruption"))
	}
	for name, wantDeleted := range map[string]bool{"spot": true, "rebalance": false, "stopping": true, "running": false, "retired": true} {
		err := kube.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{})
		if deleted := apierrors.IsNotFound(err); deleted != wantDeleted {
			t.Errorf("nodeclaim %s deleted = %v, want %v", name, deleted, wantDeleted)
		}
	}
	if !unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}) {
		t.Errorf("spot interruption did not mark m5.large/us-west-2a/spot unavailable")
	}
	if n := len(s.Calls("ReceiveMessage")); n == 0 {
		t.Errorf("no ReceiveMessage calls went over the wire")
	}
	if wait := s.Calls("ReceiveMessage")[0].Body["WaitTimeSeconds"]; wait != float64(1) {
		t.Errorf("ReceiveMessage WaitTimeSeconds = %v, want the long poll of 1", wait)
	}
}
