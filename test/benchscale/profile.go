package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profiler saves the manager's pprof profiles into dir: CPU profiles back to back while the run
// lasts (merge them with `go tool pprof -proto cpu-*.pb.gz`) and heap profiles on request.
type profiler struct {
	base, dir string
	stop      context.CancelFunc
	done      chan struct{}
}

// chunk is the length of one CPU profile.
const chunk = 20 * time.Second

func startProfiler(ctx context.Context, addr, dir string) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &profiler{base: "http://" + addr + "/debug/pprof/", dir: dir, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ctx.Err() == nil; i++ {
			// The last chunk is cut short when the run ends; pprof keeps what it sampled so far only
			// when the request completes, so a cancelled one is lost (at most one chunk).
			_ = p.save(ctx, fmt.Sprintf("profile?seconds=%d", int(chunk.Seconds())), fmt.Sprintf("cpu-%03d.pb.gz", i))
		}
	}()
	return p, nil
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
