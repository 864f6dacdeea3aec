package nodeclaim_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/nodeclaim"
	"github.com/joist-dev/joist/test/env"
)

// barrierCloud launches a claim only once `want` launches are in flight at the same time, as a
// cloud whose launch calls each take a while would need them to finish in one call's time.
type barrierCloud struct {
	cloudprovider.CloudProvider
	want     int32
	inFlight atomic.Int32
	open     chan struct{}
}

func (b *barrierCloud) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	if b.inFlight.Add(1) == b.want {
		close(b.open)
	}
	select {
	case <-b.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := nc.DeepCopy()
	out.Status.ProviderID = "kwok://" + nc.Name
	return out, nil
}

// The claims of a provisioning batch launch together: a batch of 50 claims has all 50 launches in
// flight at once, rather than ten at a time (at 1,000 claims, ten at a time held Nodes back by a
// minute and more while each launch and status write waited on a loaded apiserver).
func TestClaimsOfABatchLaunchTogether(t *testing.T) {
	const claims = 50
	e := env.New(t, env.Options{})
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := indexes.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	cloud := &barrierCloud{want: claims, open: make(chan struct{})}
	c := nodeclaim.New(mgr.GetClient(), cloud, nil, events.NewFakeRecorder(10*claims), clock.RealClock{}, nodeclaim.DefaultOptions())
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	for i := range claims {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%02d", i), Finalizers: []string{v1.TerminationFinalizer}},
			Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
				NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}
		if err := e.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	var launched int
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, list); err != nil {
			return false, err
		}
		launched = 0
		for i := range list.Items {
			if list.Items[i].IsTrue(v1.ConditionTypeLaunched) {
				launched++
			}
		}
		return launched == claims, nil
	})
	if err != nil {
		t.Fatalf("%d of %d claims launched (%d launches in flight at most): the lifecycle does not launch a batch's claims together", launched, claims, cloud.inFlight.Load())
	}
}
