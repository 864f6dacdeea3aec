package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/test/env"
)

// traceDir (-trace-scheduler) receives, per run, the kube-scheduler's log at -v=3 (each failed
// attempt, with the queue it went to and the plugins that rejected it) and its queue metrics
// sampled every traceEvery: where the pods wait between the release and their binding. Tracing makes
// the scheduler log and serve scrapes, so a traced run's times are not for publishing.
var traceDir string

// traceEvery is the sampling interval of the scheduler's metrics.
const traceEvery = 200 * time.Millisecond

// schedulerTrace samples one run's kube-scheduler.
type schedulerTrace struct {
	name, url, logDir string
	cancel            context.CancelFunc
	done              chan struct{}
	// apiserver is read every apiserverEvery samples for its request counts by verb and resource.
	apiserver kubernetes.Interface
}

// apiserverEvery is how many scheduler samples go by between two reads of the apiserver's request
// counts (its /metrics is large; reading it often would load the apiserver being traced).
const apiserverEvery = 5

// benchEnv starts a bench run's control plane; with -trace-scheduler the scheduler logs its queue
// moves and serves its metrics, which the returned trace samples until finish (nil otherwise).
func benchEnv(kind string) (*env.Env, *schedulerTrace, error) {
	opts := env.Options{Scheduler: true, ControllerManager: true, KWOK: true}
	if traceDir == "" {
		e, err := env.Start(opts)
		return e, nil, err
	}
	dir, err := os.MkdirTemp("", "joist-bench-trace-")
	if err != nil {
		return nil, nil, err
	}
	args, url, err := env.SchedulerMetricsArgs(dir)
	if err != nil {
		return nil, nil, err
	}
	opts.LogDir, opts.SchedulerArgs = dir, append(args, "-v=3")
	e, err := env.Start(opts)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, nil, errors.Join(err, e.Stop())
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &schedulerTrace{name: kind + "-" + time.Now().UTC().Format("150405"), url: url, logDir: dir, cancel: cancel, done: make(chan struct{}), apiserver: cs}
	go t.sample(ctx)
	return e, t, nil
}

// cleanup removes the run's log folder (after finish has kept what it keeps).
func (t *schedulerTrace) cleanup() {
	if t != nil {
		_ = os.RemoveAll(t.logDir)
	}
}

// sample writes one JSON line per traceEvery: the wall-clock time and every scheduler_ series
// (histograms as _count and _sum), keyed name{label=value,…}.
func (t *schedulerTrace) sample(ctx context.Context) {
	defer close(t.done)
	f, err := os.Create(filepath.Join(traceDir, t.name+"-scheduler-metrics.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	tick := time.NewTicker(traceEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		if families, err := env.ScrapeLoopbackTLS(ctx, t.url); err == nil {
			_ = enc.Encode(map[string]any{"t": float64(time.Now().UnixMicro()) / 1e6, "m": flatten(families)})
		}
		if i%apiserverEvery == 0 {
			if counts, err := env.ApiserverRequests(ctx, t.apiserver, requestKey); err == nil {
				_ = enc.Encode(map[string]any{"t": float64(time.Now().UnixMicro()) / 1e6, "apiserver": counts})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// flatten keys every scheduler_ series by its name and sorted labels.
func flatten(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "scheduler_") || strings.Contains(name, "duration_seconds") {
			continue
		}
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				if l.GetName() != "profile" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			sort.Strings(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.Histogram.GetSampleCount())
				out[key+"_sum"] = m.Histogram.GetSampleSum()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			}
		}
	}
	return out
}

// finish stops the sampling and keeps the run's scheduler and KWOK logs, its start time (the
// Deployments' creation) and each node's milestones (seconds from the start) beside the samples.
func (t *schedulerTrace) finish(tl *timeline) {
	if t == nil {
		return
	}
	tl.mu.Lock()
	start := tl.start
	nodes := map[string][]float64{}
	for name, seen := range tl.nodeSeen {
		nodes[name] = []float64{seen.Seconds(), tl.nodeReady[name].Seconds(), tl.nodeNotReadyTaintGone[name].Seconds(), tl.nodeReleased[name].Seconds(), tl.nodeTaintFree[name].Seconds()}
	}
	tl.mu.Unlock()
	if raw, err := json.Marshal(map[string]any{"appeared/Ready/notReadyGone/released/taintFree": nodes}); err == nil {
		_ = os.WriteFile(filepath.Join(traceDir, t.name+"-nodes.json"), raw, 0o644)
	}
	t.cancel()
	<-t.done
	for _, name := range []string{"kube-scheduler.log", "kwok.log"} {
		if raw, err := os.ReadFile(filepath.Join(t.logDir, name)); err == nil {
			_ = os.WriteFile(filepath.Join(traceDir, t.name+"-"+name), raw, 0o644)
		}
	}
	_ = os.WriteFile(filepath.Join(traceDir, t.name+"-start.txt"), []byte(start.UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
}

// requestKey names an apiserver request series by client, verb, resource and subresource.
func requestKey(l map[string]string) string {
	key := l["verb"] + " " + l["resource"]
	if l["subresource"] != "" {
		key += "/" + l["subresource"]
	}
	return key
}
