package e2e

import (
	"os"

	"go.uber.org/zap/zapcore"
)

// zapLevel is Info, or Debug with JOIST_E2E_DEBUG=1.
func zapLevel() zapcore.Level {
	if os.Getenv("JOIST_E2E_DEBUG") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
