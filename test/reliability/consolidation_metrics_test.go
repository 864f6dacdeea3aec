package reliability

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/joist-dev/joist/test/env"
)

// reservationSeries are the joist_disruption_* counters a consolidation trial reads from the
// manager (controllers/nomination/reservation_metrics.go), summed over its processes.
var reservationSeries = []string{
	"joist_disruption_planned_replacements_total",
	"joist_disruption_unforeseen_launches_total",
	"joist_disruption_reserved_pods_total",
	"joist_disruption_reservations_taken_total",
	"joist_disruption_reservations_unused_total",
	"joist_disruption_repeated_evictions_total",
}

// metricsScraper scrapes the running manager every interval and keeps, per process start, the last
// values it read: a SIGKILLed process's counters are what it showed last.
type metricsScraper struct {
	mu   sync.Mutex
	last map[int]map[string]float64
	// process is the start number of the manager running now (0: none), set by the trial.
	process int
}

func scrapeMetrics(ctx context.Context, url string, every time.Duration) *metricsScraper {
	m := &metricsScraper{last: map[int]map[string]float64{}}
	go func() {
		for ctx.Err() == nil {
			m.mu.Lock()
			process := m.process
			m.mu.Unlock()
			if process > 0 {
				if vals, err := scrapeCounters(ctx, url); err == nil {
					m.mu.Lock()
					if m.process == process {
						m.last[process] = vals
					}
					m.mu.Unlock()
				}
			}
			time.Sleep(every)
		}
	}()
	return m
}

// running tells the scraper which process start serves the port now (0: none).
func (m *metricsScraper) running(process int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.process = process
}

// scrapeNow reads the running process once more (before a kill or at the end).
func (m *metricsScraper) scrapeNow(ctx context.Context, url string) {
	vals, err := scrapeCounters(ctx, url)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil && m.process > 0 {
		m.last[m.process] = vals
	}
}

func scrapeCounters(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	families, err := env.ScrapeMetrics(ctx, url)
	if err != nil {
		return nil, err
	}
	return env.SumSeries(families, reservationSeries...), nil
}

// reservationFigures are the reservation counters summed over the trial's processes.
type reservationFigures struct {
	planned, unforeseen, reserved, taken, unused, repeated float64
	processes                                              int
}

func (m *metricsScraper) figures() reservationFigures {
	m.mu.Lock()
	defer m.mu.Unlock()
	var f reservationFigures
	for _, vals := range m.last {
		f.processes++
		f.planned += vals["joist_disruption_planned_replacements_total"]
		f.unforeseen += vals["joist_disruption_unforeseen_launches_total"]
		f.reserved += vals["joist_disruption_reserved_pods_total"]
		f.taken += vals["joist_disruption_reservations_taken_total"]
		f.unused += vals["joist_disruption_reservations_unused_total"]
		f.repeated += vals["joist_disruption_repeated_evictions_total"]
	}
	return f
}

// launchRatio is NodeClaims launched because of disruption ÷ planned replacements (1 is on plan).
func (f reservationFigures) launchRatio() string {
	if f.planned == 0 {
		if f.unforeseen == 0 {
			return "—"
		}
		return "∞"
	}
	return fmt.Sprintf("%.2f", (f.planned+f.unforeseen)/f.planned)
}

func (f reservationFigures) String() string {
	return fmt.Sprintf("%g planned replacements, %g unforeseen launches (ratio %s), %g pods reserved, %g taken, %g unused, %g repeated evictions (%d processes scraped)",
		f.planned, f.unforeseen, f.launchRatio(), f.reserved, f.taken, f.unused, f.repeated, f.processes)
}
