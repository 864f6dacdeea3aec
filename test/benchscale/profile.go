package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// profiler saves the manager's pprof profiles into dir: CPU profiles back to back while the run
// lasts (merge them with `go tool pprof -proto cpu-*.pb.gz`), heap profiles on request, and the heap
// profile at the manager's largest resident set so far (heap-peak.pb.gz, with its RSS in
// heap-peak.txt), sampled every peakEvery.
type profiler struct {
	base, dir string
	stop      context.CancelFunc
	done      chan struct{}
}

// peakEvery is how often the resident set is sampled for heap-peak.pb.gz.
const peakEvery = 2 * time.Second

// chunk is the length of one CPU profile.
const chunk = 20 * time.Second

func startProfiler(ctx context.Context, addr, dir string, pid int) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &profiler{base: "http://" + addr + "/debug/pprof/", dir: dir, stop: cancel, done: make(chan struct{})}
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		p.watchPeak(ctx, pid)
	}()
	go func() {
		defer close(p.done)
		defer func() { <-peakDone }()
		for i := 0; ctx.Err() == nil; i++ {
			// The last chunk is cut short when the run ends; pprof keeps what it sampled so far only
			// when the request completes, so a cancelled one is lost (at most one chunk).
			_ = p.save(ctx, fmt.Sprintf("profile?seconds=%d", int(chunk.Seconds())), fmt.Sprintf("cpu-%03d.pb.gz", i))
		}
	}()
	return p, nil
}

// watchPeak saves the heap profile each time the resident set grew 5 % past the largest seen.
func (p *profiler) watchPeak(ctx context.Context, pid int) {
	var peak int64
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		rss, err := residentKiB(pid)
		if err != nil || rss < peak+peak/20 {
			return
		}
		peak = rss
		if p.heap(ctx, "heap-peak.pb.gz") == nil {
			_ = os.WriteFile(filepath.Join(p.dir, "heap-peak.txt"), append(fmt.Appendf(nil, "VmRSS %d MiB at %s\n", rss/1024, time.Now().Format(time.RFC3339)),
				residentSplit(pid, p.memStats(ctx))...), 0o644)
		}
	}, peakEvery)
}

// residentKiB is a process's current resident set (VmRSS) in KiB.
func residentKiB(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// memStats is the runtime.MemStats section of the manager's text heap profile (heap?debug=1): the
// heap in use, the GC's goal, what the runtime holds but has not returned, stacks.
func (p *profiler) memStats(ctx context.Context) []byte {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"heap?debug=1", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	if i := strings.Index(string(body), "# runtime.MemStats"); i >= 0 {
		return body[i:]
	}
	return nil
}

// residentSplit is the process's resident set split as /proc/PID/smaps_rollup reports it
// (anonymous: the heap, stacks, the runtime's own; file-backed: the binary's pages), then stats.
func residentSplit(pid int, stats []byte) []byte {
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return stats
	}
	var out []byte
	for _, line := range strings.Split(string(rollup), "\n") {
		for _, key := range []string{"Rss:", "Anonymous:", "Shared_Clean:", "Private_Clean:", "Private_Dirty:"} {
			if strings.HasPrefix(line, key) {
				out = append(out, line+"\n"...)
			}
		}
	}
	return append(out, stats...)
}

// heap saves the heap profile as name.
func (p *profiler) heap(ctx context.Context, name string) error {
	return p.save(ctx, "heap", name)
}

func (p *profiler) save(ctx context.Context, path, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reading profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading profile %s: %w", path, err)
	}
	return os.WriteFile(filepath.Join(p.dir, name), body, 0o644)
}

func (p *profiler) close() {
	p.stop()
	<-p.done
}
