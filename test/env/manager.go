package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// ManagerOptions says how to run the joist binary as a child process against an Env.
type ManagerOptions struct {
	// Binary is the joist executable (BuildManager makes one).
	Binary string
	// Args follow the defaults (--leader-elect=false, --cloud-provider=kwok, --enable-webhooks=false,
	// metrics and health probes off); a flag given again here wins, as the flag package keeps the last.
	Args []string
	// Kubeconfig the manager uses; the environment's admin kubeconfig when empty.
	Kubeconfig string
	// LogName is the log file's name in the environment's LogDir; "joist.log" when empty.
	LogName string
	// Webhooks serves admission where the apiserver expects it (envtest's port and certificates).
	Webhooks bool
	// Metrics serves the manager's /metrics over plain HTTP on a free local port, for Manager.Metrics.
	Metrics bool
	// Environment, when not nil, is the process's whole environment (as an install would give it,
	// nothing of the test's own); nil inherits the test's. KUBECONFIG is set either way.
	Environment []string
}

// Manager is a running joist process.
type Manager struct {
	cmd         *exec.Cmd
	logPath     string
	metricsPort int
	done        chan struct{}
}

// StartManager starts the joist binary in its own process group; it dies with the test process.
func (e *Env) StartManager(opts ManagerOptions) (*Manager, error) {
	if _, err := os.Stat(opts.Binary); err != nil {
		return nil, fmt.Errorf("joist binary %q: %w (build it with `go build -o bin/joist ./cmd/joist`)", opts.Binary, err)
	}
	args := []string{"--leader-elect=false", "--cloud-provider=kwok", "--metrics-bind-address=0", "--health-probe-bind-address=0"}
	if opts.Webhooks {
		if e.WebhookInstallOptions == nil {
			return nil, fmt.Errorf("ManagerOptions.Webhooks needs an environment started with Options.WebhookPaths")
		}
		wh := e.WebhookInstallOptions
		args = append(args, "--enable-webhooks=true", "--webhook-port="+strconv.Itoa(wh.LocalServingPort), "--webhook-cert-dir="+wh.LocalServingCertDir)
	} else {
		args = append(args, "--enable-webhooks=false")
	}
	metricsPort := 0
	if opts.Metrics {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		metricsPort = port
		args = append(args, "--metrics-bind-address=127.0.0.1:"+strconv.Itoa(port), "--metrics-secure=false")
	}
	args = append(args, opts.Args...)
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = e.KubeconfigPath
	}
	name := opts.LogName
	if name == "" {
		name = "joist.log"
	}
	logPath := filepath.Join(e.LogDir, name)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the manager log: %w", err)
	}
	cmd := exec.Command(opts.Binary, args...)
	environment := os.Environ()
	if opts.Environment != nil {
		environment = opts.Environment
	}
	cmd.Env = append(append([]string{}, environment...), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", opts.Binary, err)
	}
	m := &Manager{cmd: cmd, logPath: logPath, metricsPort: metricsPort, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(m.done) }()
	return m, nil
}

// Pid is the manager's process id.
func (m *Manager) Pid() int { return m.cmd.Process.Pid }

// LogPath is the file the manager logs to.
func (m *Manager) LogPath() string { return m.logPath }

// Exited reports whether the process has stopped.
func (m *Manager) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Err says why a manager that should be running is not: nil while it runs, else an error naming
// its log. Test waits check it so a crashed manager fails the test at once instead of at a timeout.
func (m *Manager) Err() error {
	if !m.Exited() {
		return nil
	}
	return fmt.Errorf("the joist manager exited (%s); see %s", m.cmd.ProcessState, m.logPath)
}

// Metrics scrapes the manager's /metrics (ManagerOptions.Metrics) into metric families by name.
func (m *Manager) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	if m.metricsPort == 0 {
		return nil, fmt.Errorf("the manager was started without ManagerOptions.Metrics")
	}
	return ScrapeMetrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", m.metricsPort))
}

// Stop asks the manager to shut down (SIGTERM) and kills it after grace.
func (m *Manager) Stop(grace time.Duration) {
	_ = syscall.Kill(-m.Pid(), syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(grace):
		m.Kill()
	}
}

// Kill SIGKILLs the manager's process group — no shutdown hooks, as in an OOM kill or a node
// failure — and waits for it to be gone.
func (m *Manager) Kill() {
	_ = syscall.Kill(-m.Pid(), syscall.SIGKILL)
	<-m.done
}

// Stats reads the running manager's peak resident set (VmHWM) and user+system CPU time from /proc.
func (m *Manager) Stats() (peakRSSMiB, cpuSeconds float64, err error) {
	return ProcessStats(m.Pid())
}

// ProcessStats reads a process's peak resident set (VmHWM) and user+system CPU time from /proc.
func ProcessStats(pid int) (peakRSSMiB, cpuSeconds float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading process status: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			peakRSSMiB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading process stat: %w", err)
	}
	// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
	fields := strings.Fields(string(stat)[strings.LastIndex(string(stat), ")")+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	return peakRSSMiB, (utime + stime) / clockTicks, nil
}

// BuildManager builds ./cmd/joist of this repository into dir and returns the binary's path.
func BuildManager(dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(dir, "joist")
	build := exec.Command("go", "build", "-o", binary, "./cmd/joist")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return binary, nil
}
