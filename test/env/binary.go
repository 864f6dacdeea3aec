package env

import (
	"fmt"
	"os"
	"testing"
)

// RunWithManagerBinary is the body of TestMain for suites that run the joist binary: binary is set to
// $JOIST_BINARY, or to ./cmd/joist built once into a temporary folder, before m runs. It returns
// the exit code for os.Exit.
func RunWithManagerBinary(m *testing.M, binary *string) int {
	if b := os.Getenv("JOIST_BINARY"); b != "" {
		*binary = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "joist-manager-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *binary, err = BuildManager(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
