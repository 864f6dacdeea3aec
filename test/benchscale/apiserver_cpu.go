package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU times (100 on Linux).
const clockTicks = 100

// apiserverCPU returns the CPU-seconds (user + system) the kube-apiserver started by this process
// (envtest runs it as a child) has used so far. On a small machine it is what gates the run: the
// difference over a run is the apiserver work the run cost, steadier than wall time under load.
func apiserverCPU() (float64, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ... utime(14) stime(15); comm may hold spaces, so split after ")".
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "kube-apiserver" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		utime, err1 := strconv.ParseFloat(f[11], 64)
		stime, err2 := strconv.ParseFloat(f[12], 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("parsing %s", path)
		}
		return (utime + stime) / clockTicks, nil
	}
	return 0, fmt.Errorf("no kube-apiserver child of process %d", self)
}

// apiserverProfileSeconds is how long the kube-apiserver's CPU profile under -profile lasts, from
// the pods' creation on.
const apiserverProfileSeconds = 30

// profileAPIServer saves the kube-apiserver's CPU profile (its /debug/pprof, on by default) over
// the next apiserverProfileSeconds into path, in the background; the returned channel closes when
// it is written (or failed: the error is printed, the run goes on).
func profileAPIServer(ctx context.Context, cs kubernetes.Interface, path string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(apiserverProfileSeconds)).Timeout((apiserverProfileSeconds + 30) * time.Second).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "apiserver CPU profile: %v\n", err)
		}
	}()
	return done
}
