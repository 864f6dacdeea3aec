package env

import (
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// DiscardLogs silences controller-runtime's logger for suites that don't run controllers (call it
// from TestMain); otherwise controller-runtime prints a warning with a stack trace per test.
func DiscardLogs() { ctrllog.SetLogger(logr.Discard()) }
