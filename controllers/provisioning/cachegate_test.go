package provisioning

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// laggingCache is a client whose reads do not show the NodeClaims created through it until release:
// an informer that has not caught up with our own writes.
type laggingCache struct {
	client.Client
	mu     sync.Mutex
	hidden map[string]bool
}

func (l *laggingCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := l.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if _, ok := obj.(*v1.NodeClaim); ok {
		l.mu.Lock()
		l.hidden[obj.GetName()] = true
		l.mu.Unlock()
	}
	return nil
}

func (l *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok && l.isHidden(key.Name) {
		return apierrors.NewNotFound(v1.GroupVersion.WithResource("nodeclaims").GroupResource(), key.Name)
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

func (l *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if claims, ok := list.(*v1.NodeClaimList); ok {
		kept := claims.Items[:0]
		for _, nc := range claims.Items {
			if !l.isHidden(nc.Name) {
				kept = append(kept, nc)
			}
		}
		claims.Items = kept
	}
	return nil
}

func (l *laggingCache) isHidden(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hidden[name]
}

func (l *laggingCache) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hidden = map[string]bool{}
}

// Pods nominated to a NodeClaim the cache does not show yet are not planned again: the next solve
// waits for the cache to show the claims this process created.
func TestNextSolveWaitsForOwnClaimsInCache(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	readyPool(t, ctx, e.Client, "default", 10, nil)
	pendingPods(t, ctx, e.Client, "p", 6, nil)
	kube := &laggingCache{Client: e.Client, hidden: map[string]bool{}}
	p, _, _ := testProvisioner(kube)

	if err := p.Provision(ctx); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	first := len(claimsOf(t, ctx, e.Client, "default"))
	if first == 0 {
		t.Fatal("first batch created no NodeClaim")
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(500 * time.Millisecond)
		kube.release()
		close(released)
	}()
	if err := p.Provision(ctx); err != nil {
		t.Fatalf("second batch: %v", err)
	}
	select {
	case <-released:
	default:
		t.Errorf("the second solve ran before the cache showed the first batch's NodeClaims")
	}
	if got := len(claimsOf(t, ctx, e.Client, "default")); got != first {
		t.Fatalf("%d NodeClaims after the second batch, want %d: pods were launched twice", got, first)
	}
}

// A claim the cache never shows (deleted before it caught up) stops holding solves after a while.
func TestCacheGateForgetsClaimsNeverSeen(t *testing.T) {
	clk := newFakeClock()
	g := newCacheGate(clk)
	g.createdClaim("gone")
	if len(g.outstanding()) != 1 {
		t.Fatal("want one outstanding claim")
	}
	clk.Step(cacheGateForget + time.Second)
	if left := g.outstanding(); len(left) != 0 {
		t.Fatalf("outstanding %v after %s, want none", left, cacheGateForget)
	}
	g.createdClaim("seen")
	g.seen("seen")
	if len(g.outstanding()) != 0 {
		t.Fatal("a seen claim must not be outstanding")
	}
}
