package env

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// requiredBinaries are the control-plane binaries `make k8s-assets` builds.
var requiredBinaries = []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok"}

// AssetsDir returns the folder holding the control-plane binaries: $KUBEBUILDER_ASSETS when set,
// otherwise the newest bin/k8s/<version> under the repository root (so a plain `go test` works after
// one `make k8s-assets`).
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, checkAssets(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	versions, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*"))
	sort.Strings(versions)
	for i := len(versions) - 1; i >= 0; i-- {
		if checkAssets(versions[i]) == nil {
			return versions[i], nil
		}
	}
	return "", fmt.Errorf("no control-plane binaries under %s/bin/k8s: run `make k8s-assets` (or `make test`, which builds them)", root)
}

func checkAssets(dir string) error {
	var missing []string
	for _, b := range requiredBinaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries missing from %s: %s; run `make k8s-assets`", dir, strings.Join(missing, ", "))
	}
	return nil
}

// RepoRoot walks up from the working directory to the folder holding Joist's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/joist-dev/joist\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("finding repository root: no go.mod of github.com/joist-dev/joist above the working directory")
		}
		dir = parent
	}
}
