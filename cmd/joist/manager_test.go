package main

import (
	"strings"
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
		{"--nomination-ttl=0s"},
		{"--garbage-collection-period=-1s"},
		{"--disruption-poll-interval=0s"},
		{"--consolidation-validation-delay=-1s"},
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
	f, _, err = parseManagerFlags([]string{"--nomination-ttl=1s", "--garbage-collection-period=5s", "--disruption-poll-interval=2s", "--consolidation-validation-delay=0s"})
	if err != nil {
		t.Fatal(err)
	}
	c := f.controllers
	if c.Nomination.NominationTTL != time.Second || c.GarbageCollection.Period != 5*time.Second || c.Disruption.PollInterval != 2*time.Second || c.Disruption.ValidationDelay != 0 {
		t.Errorf("loop timing flags not honoured: nomination %+v, gc %+v, disruption %+v", c.Nomination, c.GarbageCollection, c.Disruption)
	}
}

// The disruption settings: spot→spot off and a 5 % minimum saving by default (Karpenter's
// defaults), each settable by flag or by variable (the flag wins), a bad value named.
func TestManagerDisruptionSettings(t *testing.T) {
	f, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := f.controllers.Disruption; d.SpotToSpotConsolidation || d.MinSavingsFraction != 0.05 {
		t.Errorf("defaults: spot-to-spot %t, min savings %v; want false, 0.05", d.SpotToSpotConsolidation, d.MinSavingsFraction)
	}
	t.Setenv("SPOT_TO_SPOT_CONSOLIDATION", "true")
	t.Setenv("CONSOLIDATION_MIN_SAVINGS", "0.1")
	if f, _, err = parseManagerFlags(nil); err != nil {
		t.Fatal(err)
	}
	if d := f.controllers.Disruption; !d.SpotToSpotConsolidation || d.MinSavingsFraction != 0.1 {
		t.Errorf("from the environment: spot-to-spot %t, min savings %v; want true, 0.1", d.SpotToSpotConsolidation, d.MinSavingsFraction)
	}
	if f, _, err = parseManagerFlags([]string{"--consolidation-min-savings=0"}); err != nil || f.controllers.Disruption.MinSavingsFraction != 0 {
		t.Errorf("the flag must win over the variable: %v, %v", f.controllers.Disruption.MinSavingsFraction, err)
	}
	for _, args := range [][]string{{"--consolidation-min-savings=1"}, {"--consolidation-min-savings=-0.1"}} {
		if _, _, err := parseManagerFlags(args); err == nil {
			t.Errorf("%v: want an error", args)
		}
	}
	t.Setenv("CONSOLIDATION_MIN_SAVINGS", "lots")
	if _, _, err := parseManagerFlags(nil); err == nil || !strings.Contains(err.Error(), "CONSOLIDATION_MIN_SAVINGS") {
		t.Errorf("a bad variable must be named, got %v", err)
	}
}

// The container's memory limit (from $MEMORY_LIMIT, which the manifests fill from
// resources.limits.memory) becomes a soft memory limit of 90 % of it, as Karpenter sets it; none
// without a limit, and $GOMEMLIMIT, read by the runtime itself, wins.
func TestMemoryLimitFromTheContainer(t *testing.T) {
	t.Setenv(memoryLimitEnv, "1073741824")
	f, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.memoryLimit != 1<<30 {
		t.Errorf("memory limit %d from $%s=1073741824", f.memoryLimit, memoryLimitEnv)
	}
	for _, c := range []struct {
		limit      int
		gomemlimit bool
		want       int64
	}{{1 << 30, false, 966367641}, {0, false, 0}, {1 << 30, true, 0}} {
		if got := softMemoryLimit(c.limit, c.gomemlimit); got != c.want {
			t.Errorf("container limit %d, $GOMEMLIMIT set %v: soft limit %d, want %d", c.limit, c.gomemlimit, got, c.want)
		}
	}
	if _, _, err := parseManagerFlags([]string{"--memory-limit=-1"}); err == nil {
		t.Error("a negative memory limit: want an error")
	}
	t.Setenv(memoryLimitEnv, "1Gi")
	if _, _, err := parseManagerFlags(nil); err == nil {
		t.Error("$MEMORY_LIMIT=1Gi (not bytes): want an error")
	}
}
