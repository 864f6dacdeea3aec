package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/joist-dev/joist/test/env"
)

// manager is the joist binary running as a child process against the demo's control plane.
type manager struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startManager(e *env.Env, binary string) (*manager, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("joist binary %s not found: run `make demo` (it builds it) or `go build -o bin/joist ./cmd/joist`", binary)
	}
	metrics, err := env.FreePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.LogDir, "joist.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating manager log: %w", err)
	}
	wh := e.WebhookInstallOptions
	cmd := exec.Command(binary,
		"--leader-elect=false",
		"--cloud-provider=kwok", // whatever $CLOUD_PROVIDER the shell exports
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metrics),
		"--health-probe-bind-address=0",
		"--webhook-port="+strconv.Itoa(wh.LocalServingPort),
		"--webhook-cert-dir="+wh.LocalServingCertDir,
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.KubeconfigPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	m := &manager{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(m.done) }()
	return m, nil
}

func (m *manager) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}
