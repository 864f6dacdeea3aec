package deploy

import (
	"fmt"
	"testing"

	"github.com/joist-dev/joist/test/env"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func fmtAny(v any) string { return fmt.Sprintf("%v", v) }
