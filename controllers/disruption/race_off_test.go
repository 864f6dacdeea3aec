//go:build !race

package disruption

const raceDetector = false
