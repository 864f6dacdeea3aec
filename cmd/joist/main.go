// Command joist is the Joist node autoscaler: `joist` runs the manager (controllers and webhooks);
// `joist simulate` runs the solver on YAML files offline; `joist policy check` reports what the
// Guardrails would deny in a directory of manifests.
package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cmd/joist/simulate"
)

// version is the release, set at build time: -ldflags "-X main.version=0.1.0".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		if code, ok := runSubcommand(os.Args[1], os.Args[2:]); ok {
			os.Exit(code)
		}
	}
	if err := runManager(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "joist:", err)
		os.Exit(1)
	}
}

// runSubcommand runs a non-manager subcommand; ok is false when name is not one.
func runSubcommand(name string, args []string) (code int, ok bool) {
	switch name {
	case "simulate":
		return simulate.Main(args, os.Stdout, os.Stderr), true
	case "policy":
		return runPolicy(args, os.Stdout, os.Stderr), true
	case "aws":
		return awsMain(args, os.Stdout, os.Stderr), true
	case "version":
		fmt.Println(version)
		return 0, true
	default:
		return 0, false
	}
}

// newScheme registers every API the manager reads or writes.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1.AddToScheme, kwokv1alpha1.AddToScheme, policyv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}
