package e2e

import "github.com/joist-dev/joist/cloudprovider/kwok"

func kwokOptions() kwok.Options { return kwok.Options{Seed: 1} }
