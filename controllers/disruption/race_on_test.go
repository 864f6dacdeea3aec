//go:build race

package disruption

// raceDetector: the race detector's instrumentation allocates beside the code under test, so the
// allocation-size assertions hold only in the plain run (make test runs both).
const raceDetector = true
