package v1beta1_test

import (
	"os"
	"testing"

	"github.com/joist-dev/joist/test/env"
)

func TestMain(m *testing.M) {
	env.DiscardLogs()
	os.Exit(m.Run())
}
