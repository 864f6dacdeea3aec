package main

import (
	"os"
	"runtime/debug"
)

// memoryLimitEnv carries the container's memory limit in bytes, set from resources.limits.memory
// through the downward API (config/manager, the chart): Karpenter's chart and operator do the same
// (MEMORY_LIMIT, and a soft limit of 90 % of it).
const memoryLimitEnv = "MEMORY_LIMIT"

// softMemoryLimitShare is the share of the container's limit the Go runtime's soft memory limit
// takes; the rest is for what the runtime does not count against it (the binary's mapped pages).
const softMemoryLimitShare = 0.9

// softMemoryLimit is the Go runtime's soft memory limit for a container limit of limit bytes, or 0
// to leave the runtime's own (none, or $GOMEMLIMIT, which the runtime has read already and which
// wins: gomemlimitSet).
func softMemoryLimit(limit int, gomemlimitSet bool) int64 {
	if limit <= 0 || gomemlimitSet {
		return 0
	}
	return int64(float64(limit) * softMemoryLimitShare)
}

// applyMemoryLimit sets the runtime's soft memory limit from the container's limit and returns it
// (0: not set). With it the GC collects more often as the heap nears the limit instead of letting
// it grow to twice the live heap (GOGC=100) into an OOM kill; below it nothing changes.
func applyMemoryLimit(limit int) int64 {
	soft := softMemoryLimit(limit, os.Getenv("GOMEMLIMIT") != "")
	if soft > 0 {
		debug.SetMemoryLimit(soft)
	}
	return soft
}
