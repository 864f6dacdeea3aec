package env

import (
	"os"
	"path/filepath"
	"testing"
)

// New starts an environment for a test and stops it in t.Cleanup. When the test fails, the last
// lines of every child process log are printed.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := Start(opts)
	if err != nil {
		t.Fatalf("starting test environment: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpLogs(t)
		}
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test environment: %v", err)
		}
	})
	return e
}

func (e *Env) dumpLogs(t testing.TB) {
	logs, _ := filepath.Glob(filepath.Join(e.LogDir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("--- tail of %s ---\n%s", l, b)
	}
}
