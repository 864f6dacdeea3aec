package solver_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// memoryPods is the cluster size of the memory benchmark: issue 22's 50,000 pods.
const memoryPods = 50000

// BenchmarkSolveMemory measures what one solve of 50,000 pods holds and allocates (issue 22's
// scale; numbers in docs/solver.md): B/op and allocs/op, the peak heap (live and garbage, as a
// sampler saw it every millisecond — what drives the process's RSS) and the peak live heap (the
// largest heap a garbage collection left during the solve; input-MiB of it is the input), besides CPU and the plan.
func BenchmarkSolveMemory(b *testing.B) {
	for _, shape := range []benchdata.Shape{benchdata.Mixed, benchdata.Shape("ec2-services"), benchdata.Shape("ec2-cluster")} {
		b.Run(fmt.Sprintf("%s/%d", shape, memoryPods), func(b *testing.B) {
			in := benchdata.MustInput(shape, memoryPods)
			input := liveHeap()
			b.ReportAllocs()
			var res solver.Result
			var peak heapPeak
			cpu0 := cpuSeconds()
			for b.Loop() {
				stop := peak.watch()
				res = solver.Solve(in)
				stop()
			}
			b.ReportMetric(1000*(cpuSeconds()-cpu0)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(peak.heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peak.live)/(1<<20), "peak-live-MiB")
			b.ReportMetric(float64(input)/(1<<20), "input-MiB")
			b.ReportMetric(float64(len(res.NewNodeClaims)), "nodes")
			if res.LowerBoundPerHour > 0 {
				b.ReportMetric(res.CostPerHour/res.LowerBoundPerHour, "x-lowerbound")
			}
		})
	}
}

// liveHeap is the heap left after a full garbage collection: here, the benchmark's input.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak is the largest heap seen by watch's sampler: heap holds every object, collected or
// not; live what the last garbage collection left.
type heapPeak struct{ heap, live uint64 }

func (h *heapPeak) watch() (stop func()) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() {
		metrics.Read(samples)
		h.heap = max(h.heap, samples[0].Value.Uint64())
		h.live = max(h.live, samples[1].Value.Uint64())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		read()
	}
}
