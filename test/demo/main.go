// Command demo runs Joist end to end on one machine: a real control plane (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager) with KWOK simulating nodes, the Joist manager with its KWOK
// cloud provider and admission webhooks, the sample NodePool and a demo workload, with live progress.
// `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/joist-dev/joist/test/env"
)

type options struct {
	duration time.Duration
	joist    string
	settle   time.Duration
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 0, "Stop after this long (0: run until Ctrl-C).")
	flag.StringVar(&o.joist, "joist", "bin/joist", "Path of the joist binary to run as the manager.")
	flag.DurationVar(&o.settle, "settle", 2*time.Minute, "How long to wait for the workload before scaling it down anyway.")
	flag.Parse()
	env.DiscardLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	say("starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager and KWOK …")
	e, err := env.Start(env.Options{
		Scheduler: true, ControllerManager: true, KWOK: true,
		WebhookPaths: []string{filepath.Join(root, "config", "webhook")},
	})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane …")
		_ = e.Stop()
	}()
	mgr, err := e.StartManager(env.ManagerOptions{Binary: filepath.Join(root, o.joist), Webhooks: true})
	if err != nil {
		return fmt.Errorf("%w; `make demo` builds bin/joist", err)
	}
	defer mgr.Stop(20 * time.Second)
	say("control plane up; Joist manager running (logs: %s)", mgr.LogPath())
	say("kubeconfig: %s   try: KUBECONFIG=%s kubectl get nodepools,nodeclaims,nodes", e.KubeconfigPath, e.KubeconfigPath)

	d := &demo{env: e, root: root}
	if err := d.waitWebhooks(ctx); err != nil {
		return err
	}
	if err := d.apply(ctx, "config/samples/kwok_v1alpha1_kwoknodeclass.yaml", "config/samples/karpenter_v1_nodepool_kwok.yaml"); err != nil {
		return err
	}
	say("applied the sample KWOKNodeClass and NodePool \"general\"")
	d.showRejection(ctx, "config/samples/demo/unsafe-nodepool.yaml")
	if err := d.apply(ctx, "config/samples/demo/workload.yaml"); err != nil {
		return err
	}
	say("applied the demo workload: 4 Deployments, 150 pods")
	if err := d.watchUntil(ctx, o.settle, func(s snapshot) bool { return s.running == 150 }); err != nil {
		return endedOr(ctx, err)
	}
	say("scaling down: batch → 0, cache → 0, web → 20 replicas")
	down := map[string]int32{"batch": 0, "cache": 0, "web": 20}
	const remaining = 60 // web 20 + api 40
	if err := d.consolidate(ctx, down, remaining); err != nil {
		return endedOr(ctx, err)
	}
	if err := d.driftRoll(ctx, remaining); err != nil {
		return endedOr(ctx, err)
	}
	return endedOr(ctx, d.watchUntil(ctx, 0, nil))
}

// endedOr drops err when --duration or Ctrl-C ended the demo mid-step (the step's calls then fail with
// the context's error): that is a clean stop, not a failure.
func endedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		say("stopped before this step finished (--duration elapsed or interrupted)")
		return nil
	}
	return err
}

func say(format string, args ...interface{}) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
