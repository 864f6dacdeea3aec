package reliability

import (
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// faultyAPIServer is a loopback proxy in front of the test apiserver that answers a fraction of
// updates with 409 Conflict and cuts watches after a few seconds, as an apiserver under load or a
// rolling apiserver upgrade does. Clients reach it over plain HTTP; it forwards as the admin user.
type faultyAPIServer struct {
	conflictRate float64
	watchLife    time.Duration

	conflicts, watchCuts atomic.Int64
	mu                   sync.Mutex
	rng                  *rand.Rand
	url                  string
}

func startFaultyAPIServer(t *testing.T, upstream *rest.Config, conflictRate float64, watchLife time.Duration) *faultyAPIServer {
	t.Helper()
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultyAPIServer{conflictRate: conflictRate, watchLife: watchLife, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1 // stream watches
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Query().Get("watch") == "true" || resp.Request.URL.Query().Get("watch") == "1" {
			body := resp.Body
			timer := time.AfterFunc(f.jitter(watchLife), func() { f.watchCuts.Add(1); _ = body.Close() })
			resp.Body = &stopOnClose{ReadCloser: body, timer: timer}
		}
		return nil
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodPut || r.Method == http.MethodPatch) && f.chance(f.conflictRate) {
			f.conflicts.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,`+
				`"message":"Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected)"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	f.url = "http://" + ln.Addr().String()
	return f
}

func (f *faultyAPIServer) chance(p float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64() < p
}

func (f *faultyAPIServer) jitter(d time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return d/2 + time.Duration(f.rng.Int63n(int64(d)))
}

// kubeconfig writes a kubeconfig pointing at the proxy.
func (f *faultyAPIServer) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: faulty, cluster: {server: %q}}]
users: [{name: faulty, user: {}}]
contexts: [{name: faulty, context: {cluster: faulty, user: faulty}}]
current-context: faulty
`, f.url)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stopOnClose stops a watch's cut timer when the client closes the watch first.
type stopOnClose struct {
	io.ReadCloser
	timer *time.Timer
}

func (s *stopOnClose) Close() error {
	s.timer.Stop()
	return s.ReadCloser.Close()
}
