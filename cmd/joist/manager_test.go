package main

import (
	"testing"
	"time"
)

func TestManagerFlagDefaults(t *testing.T) {
	t.Setenv(installNamespaceEnv, "autoscaling")
	f, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.installNamespace != "autoscaling" || f.leaderElectionNS != "autoscaling" {
		t.Errorf("install namespace %q, lease namespace %q: both must come from $%s", f.installNamespace, f.leaderElectionNS, installNamespaceEnv)
	}
	m := f.metricsOptions()
	if !m.SecureServing || m.FilterProvider == nil || m.BindAddress != ":8443" {
		t.Errorf("metrics must default to HTTPS on :8443 behind authn/authz, got %+v", m)
	}
	if len(f.tlsOpts()) != 1 {
		t.Error("HTTP/2 must be off by default")
	}
	if f.gracefulShutdownTimeout >= 30*time.Second {
		t.Errorf("graceful shutdown %s must stay below the pod's 30 s termination grace period", f.gracefulShutdownTimeout)
	}
}

func TestManagerFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--graceful-shutdown-timeout=0s"},
		{"--batch-idle-duration=0s"},
	} {
		if _, _, err := parseManagerFlags(args); err == nil {
			t.Errorf("%v: want an error", args)
		}
	}
	f, _, err := parseManagerFlags([]string{"--metrics-secure=false", "--enable-http2", "--install-namespace=x", "--leader-election-namespace=y"})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.metricsOptions(); m.SecureServing || m.FilterProvider != nil || f.tlsOpts() != nil || f.leaderElectionNS != "y" {
		t.Errorf("explicit flags not honoured: %+v", f)
	}
}
