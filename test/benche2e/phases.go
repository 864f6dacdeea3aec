package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// phases are a run's milestones, each the time from the Deployments' creation until the last pod,
// NodeClaim or node reached it (zero: not reached, or not part of the run — the floor has no batch,
// claims or release). Where the time goes between two milestones is what the phase costs.
type phases struct {
	// created: every pod exists; unschedulable: the kube-scheduler has marked every pod it will mark
	// PodScheduled=False (the floor's pods fit at once and are never marked).
	created, unschedulable time.Duration
	// batchClosed and planned are read from the manager's log: the first batch that launched
	// claims closed, and its solve finished.
	batchClosed, planned time.Duration
	// claimsCreated: the last NodeClaim appeared; registered and ready: the last node appeared and
	// turned Ready.
	claimsCreated, registered, ready time.Duration
	// nominated: the last pod got status.nominatedNodeName; pinned: the last pod was seen tolerating
	// its planned claim's pin taint; released: the last node lost the karpenter.sh/unregistered taint.
	nominated, pinned, released time.Duration
	bound, running              time.Duration
}

// phaseNames label the milestones in order, for the report.
var phaseNames = []string{"created", "unschedulable", "batch closed", "planned", "claims created", "registered", "Ready", "nominated", "pinned", "released", "bound", "Running"}

func (p phases) values() []time.Duration {
	return []time.Duration{p.created, p.unschedulable, p.batchClosed, p.planned, p.claimsCreated, p.registered, p.ready, p.nominated, p.pinned, p.released, p.bound, p.running}
}

func phasesFrom(v []time.Duration) phases {
	return phases{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]}
}

// String lists the milestones reached, in order: "created 3.1s → unschedulable 3.4s → …".
func (p phases) String() string {
	var parts []string
	for i, d := range p.values() {
		if d != 0 {
			parts = append(parts, fmt.Sprintf("%s %.2fs", phaseNames[i], d.Seconds()))
		}
	}
	return strings.Join(parts, " → ")
}

// medianPhases takes each milestone's median independently.
func medianPhases(ps []phases) phases {
	out := make([]time.Duration, len(phaseNames))
	for i := range out {
		var v []time.Duration
		for _, p := range ps {
			v = append(v, p.values()[i])
		}
		sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
		out[i] = v[len(v)/2]
	}
	return phasesFrom(out)
}

// phases reads the milestones the timeline recorded.
func (t *timeline) phases() phases {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := func(m map[string]time.Duration) time.Duration {
		var out time.Duration
		for _, d := range m {
			out = max(out, d)
		}
		return out
	}
	return phases{
		created: t.allCreated, unschedulable: t.lastUnschedulable,
		claimsCreated: last(t.claimSeen), registered: last(t.nodeSeen), ready: last(t.nodeReady),
		nominated: t.lastNominated, pinned: t.lastPinned, released: last(t.nodeReleased),
		bound: t.allBound, running: t.allRunning,
	}
}

// solvedBatch is the manager's "solved batch" log line (JSON, rfc3339nano timestamps).
type solvedBatch struct {
	Msg           string `json:"msg"`
	TS            string `json:"ts"`
	Duration      string `json:"duration"`
	NewNodeClaims int    `json:"newNodeClaims"`
}

// batchTimes reads from the manager's log when its first batch that launched NodeClaims closed (its
// snapshot began) and when its solve ended, relative to start.
func batchTimes(logPath string, start time.Time) (closed, planned time.Duration, err error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line solvedBatch
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "solved batch" || line.NewNodeClaims == 0 {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, line.TS)
		if err != nil {
			return 0, 0, fmt.Errorf("manager log timestamp %q: %w", line.TS, err)
		}
		took, err := time.ParseDuration(line.Duration)
		if err != nil {
			return 0, 0, fmt.Errorf("manager log duration %q: %w", line.Duration, err)
		}
		return ts.Add(-took).Sub(start), ts.Sub(start), nil
	}
	return 0, 0, sc.Err()
}
