package env

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// ScrapeMetrics reads and parses a Prometheus text endpoint (a manager's plain-HTTP metrics).
func ScrapeMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	return scrape(ctx, http.DefaultClient, url, "the manager's metrics")
}

// scrape reads and parses the Prometheus text endpoint url with c; what names it in errors.
func scrape(ctx context.Context, c *http.Client, url, what string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", what, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", what, err)
	}
	return families, nil
}

// SumSeries sums each named counter or gauge over its labels (0 for a series not exported).
func SumSeries(families map[string]*dto.MetricFamily, names ...string) map[string]float64 {
	out := make(map[string]float64, len(names))
	for _, name := range names {
		if f := families[name]; f != nil {
			for _, m := range f.Metric {
				out[name] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// PlainMetricsArgs are manager flags serving its /metrics over plain HTTP on a free loopback port,
// and the URL to scrape them at.
func PlainMetricsArgs() ([]string, string, error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	return []string{"--metrics-bind-address=" + addr, "--metrics-secure=false"}, "http://" + addr + "/metrics", nil
}

// ApiserverRequests sums the apiserver's apiserver_request_total series by key(labels), skipping the
// series whose key is "".
func ApiserverRequests(ctx context.Context, cs kubernetes.Interface, key func(labels map[string]string) string) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading apiserver metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing apiserver metrics: %w", err)
	}
	out := map[string]float64{}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.Metric {
			labels := make(map[string]string, len(m.Label))
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if k := key(labels); k != "" {
				out[k] += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}

// HistogramP99 is, for each value of the label byLabel, the upper bound of the first bucket of the
// named histogram holding at least 99 % of its samples (summed over the other labels); -1 when only
// +Inf does. Series with no samples are left out.
func HistogramP99(families map[string]*dto.MetricFamily, name, byLabel string) map[string]time.Duration {
	buckets := map[string]map[float64]float64{}
	totals := map[string]float64{}
	if f := families[name]; f != nil {
		for _, m := range f.Metric {
			key := ""
			for _, l := range m.Label {
				if l.GetName() == byLabel {
					key = l.GetValue()
				}
			}
			if buckets[key] == nil {
				buckets[key] = map[float64]float64{}
			}
			for _, b := range m.GetHistogram().Bucket {
				if !math.IsInf(b.GetUpperBound(), 1) {
					buckets[key][b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			}
			totals[key] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	out := map[string]time.Duration{}
	for key, total := range totals {
		if total == 0 {
			continue
		}
		out[key] = -1
		for _, le := range slices.Sorted(maps.Keys(buckets[key])) {
			if buckets[key][le] >= 0.99*total {
				out[key] = time.Duration(le * float64(time.Second))
				break
			}
		}
	}
	return out
}

// SchedulerMetricsArgs are kube-scheduler flags serving its /metrics on a free loopback port (HTTPS
// with a self-signed certificate written to certDir, /metrics open to unauthenticated reads, as
// /healthz is by default), and the URL to scrape them at with ScrapeLoopbackTLS. The scheduler then
// does the work of serving a scrape; a benchmark that publishes times leaves it off.
func SchedulerMetricsArgs(certDir string) ([]string, string, error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	return []string{"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--cert-dir=" + certDir,
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"},
		"https://127.0.0.1:" + strconv.Itoa(port) + "/metrics", nil
}

// loopbackTLS trusts any certificate: it is used only for a child's self-signed loopback endpoint.
var loopbackTLS = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a child process's self-signed cert on 127.0.0.1
}}

// ScrapeLoopbackTLS reads and parses a Prometheus endpoint served over HTTPS with a self-signed
// certificate on the loopback interface (SchedulerMetricsArgs).
func ScrapeLoopbackTLS(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		return nil, fmt.Errorf("scraping %s: only a loopback HTTPS endpoint is scraped without verifying its certificate", url)
	}
	return scrape(ctx, loopbackTLS, url, url)
}
