package deploy

import (
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
