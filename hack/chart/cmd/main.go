// Command chart writes the generated parts of charts/joist (crds/, files/rbac.yaml,
// files/webhooks.yaml) from config/: `make manifests` runs it after controller-gen. See package chart.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/joist-dev/joist/hack/chart"
)

func main() {
	config := flag.String("config", "config", "The repository's config/ folder.")
	out := flag.String("chart", "charts/joist", "The chart folder to write into.")
	flag.Parse()
	files, err := chart.Generate(*config)
	if err == nil {
		err = chart.Write(*out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}
