#!/usr/bin/env bash
# Prints the packages whose test binaries do not link envtest, i.e. whose tests need no control
# plane. `make test-unit` runs exactly these; `make test` runs every package.
set -euo pipefail
envtest=sigs.k8s.io/controller-runtime/pkg/envtest
go list -test -f '{{if eq .Name "main"}}{{.ImportPath}} {{join .Deps " "}}{{end}}' ./... |
  awk -v envtest="$envtest" '$1 ~ /\.test$/ {
    uses = 0
    for (i = 2; i <= NF; i++) if ($i == envtest) { uses = 1; break }
    if (!uses) { sub(/\.test$/, "", $1); print $1 }
  }' | sort
