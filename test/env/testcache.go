package env

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StartTestCache starts an informer cache on the environment's apiserver for a test that reads
// through it without a manager, and a client whose reads go through that cache. opts.Scheme defaults
// to the environment's; setup (may be nil) runs on the cache before it starts, e.g. to register
// field indexes. Both stop when the test ends.
func (e *Env) StartTestCache(t testing.TB, opts cache.Options, setup func(context.Context, cache.Cache) error) (context.Context, cache.Cache, client.Client) {
	t.Helper()
	if opts.Scheme == nil {
		opts.Scheme = e.Scheme
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informers, err := cache.New(e.Config, opts)
	if err != nil {
		t.Fatalf("creating the informer cache: %v", err)
	}
	if setup != nil {
		if err := setup(ctx, informers); err != nil {
			t.Fatalf("setting up the informer cache: %v", err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	cached, err := client.New(e.Config, client.Options{Scheme: e.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatalf("creating the cached client: %v", err)
	}
	return ctx, informers, cached
}
