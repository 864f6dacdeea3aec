package main

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/test/env"
)

// TestKWOKStartRefusedWithoutNodeCreate runs the start-up check against a real apiserver: an admin
// passes; a service account without config/kwok's ClusterRole is refused with the fix in the message.
func TestKWOKStartRefusedWithoutNodeCreate(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	if err := checkNodeCreate(ctx, e.Client, "--cloud-provider=kwok"); err != nil {
		t.Errorf("admin: %v", err)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:joist-system:joist-controller-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:joist-system", "system:authenticated"},
	}
	sa, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	err = checkNodeCreate(ctx, sa, "$CLOUD_PROVIDER=kwok")
	for _, want := range []string{"selected by $CLOUD_PROVIDER=kwok", "config/kwok", "$CLOUD_PROVIDER=aws", "--cloud-provider=aws"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("service account without node create: err = %v, want a refusal naming %q", err, want)
		}
	}
	t.Log(err)
}
