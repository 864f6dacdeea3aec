package metrics

import (
	"context"
	"errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// recording is a provider whose calls fail with the configured error.
type recording struct {
	err   error
	calls []string
}

func (r *recording) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	r.calls = append(r.calls, "Create")
	return &v1.NodeClaim{}, r.err
}
func (r *recording) Delete(context.Context, *v1.NodeClaim) error {
	r.calls = append(r.calls, "Delete")
	return r.err
}
func (r *recording) Get(context.Context, string) (*v1.NodeClaim, error) {
	r.calls = append(r.calls, "Get")
	return nil, r.err
}
func (r *recording) List(context.Context) ([]*v1.NodeClaim, error) {
	r.calls = append(r.calls, "List")
	return nil, r.err
}
func (r *recording) GetInstanceTypes(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) {
	r.calls = append(r.calls, "GetInstanceTypes")
	return nil, r.err
}
func (r *recording) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	r.calls = append(r.calls, "IsDrifted")
	return "", r.err
}
func (r *recording) Name() string { return "recording" }

func TestDecorateCountsCallsAndErrors(t *testing.T) {
	inner := &recording{}
	cp := Decorate(inner)
	if Decorate(cp) != cp {
		t.Error("decorating a decorated provider wrapped it twice")
	}
	ctx := context.Background()
	_, _ = cp.Create(ctx, &v1.NodeClaim{})
	inner.err = cloudprovider.NewNodeClaimNotFoundError(errors.New("gone"))
	_ = cp.Delete(ctx, &v1.NodeClaim{})
	inner.err = &cloudprovider.InsufficientCapacityError{Err: errors.New("sold out")}
	_, _ = cp.Create(ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.NodePoolLabelKey: "general"}}})
	inner.err = errors.New("throttled")
	_, _ = cp.List(ctx)

	if got := len(inner.calls); got != 4 {
		t.Fatalf("inner provider saw %d calls, want 4", got)
	}
	if n := testutil.CollectAndCount(Duration); n != 3 {
		t.Errorf("duration series = %d, want 3 (Create, Delete, List)", n)
	}
	for _, tc := range []struct {
		method, kind, pool string
		want               float64
	}{
		{"Create", "InsufficientCapacityError", "general", 1},
		{"Delete", "NodeClaimNotFoundError", "", 1},
		{"List", "other", "", 1},
		{"Create", "other", "", 0},
	} {
		if got := testutil.ToFloat64(Errors.WithLabelValues("", tc.method, "recording", tc.kind, tc.pool)); got != tc.want {
			t.Errorf("errors{method=%s,error=%s} = %v, want %v", tc.method, tc.kind, got, tc.want)
		}
	}
}

// withExtras is a provider with the optional interfaces the controller wiring looks for.
type withExtras struct {
	recording
	cache *cloudprovider.UnavailableOfferings
}

func (w *withExtras) UnavailableOfferings() *cloudprovider.UnavailableOfferings { return w.cache }
func (w *withExtras) Start(context.Context) error                               { return nil }

// Decorating must not hide the provider's optional interfaces: the launch path marks the shared
// unavailable-offerings cache and the manager runs the provider's own background loop.
func TestDecoratedProviderKeepsOptionalInterfaces(t *testing.T) {
	cache := cloudprovider.NewUnavailableOfferings(nil, 0)
	cp := Decorate(&withExtras{cache: cache})
	if got := cloudprovider.UnavailableOfferingsOf(cp); got != cache {
		t.Errorf("UnavailableOfferingsOf(decorated) = %p, want the provider's cache %p", got, cache)
	}
	if _, ok := cloudprovider.As[interface{ Start(context.Context) error }](cp); !ok {
		t.Error("the decorated provider's Start is not reachable through cloudprovider.As")
	}
	if _, ok := cloudprovider.As[cloudprovider.ControllerRegistrar](cp); ok {
		t.Error("As found a ControllerRegistrar the provider does not implement")
	}
}
