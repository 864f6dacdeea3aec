# Joist — Kubernetes node autoscaler. `make help` lists the targets.

IMG ?= ghcr.io/joist-dev/joist:latest
GO ?= go
CONTROLLER_GEN ?= $(GO) tool controller-gen

# Control-plane binaries built from Go modules (hack/k8s-assets), cached per Kubernetes version.
KUBE_VERSION := $(shell awk '$$1=="k8s.io/kubernetes"{sub(/^v/,"",$$2); print $$2}' hack/k8s-assets/go.mod)
K8S_ASSETS := $(CURDIR)/bin/k8s/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS := $(K8S_ASSETS)

# Packages controller-gen reads markers from (bench/upstream is a separate module on a newer Go).
GEN_PATHS := {./api/...,./controllers/...,./webhooks/...}

# go test flags; `make test TESTFLAGS=-v` for verbose output.
TESTFLAGS ?=
TEST_TIMEOUT ?= 30m

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook manifests from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="$(GEN_PATHS)" output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: ## Generate DeepCopy methods from markers.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify
verify: manifests generate ## Fail when generated files are out of date.
	@git diff --exit-code -- config api || (echo "generated files are stale: run 'make manifests generate' and commit"; exit 1)

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: k8s-assets
k8s-assets: ## Build kube-apiserver, etcd, kube-scheduler, kube-controller-manager and kwok into bin/k8s/<version> (skipped when present).
	bash hack/k8s-assets/build.sh $(K8S_ASSETS)

.PHONY: test
test: k8s-assets manifests generate vet ## Run all tests against a real control plane.
	$(GO) test ./... -timeout $(TEST_TIMEOUT) $(TESTFLAGS)

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager binary.
	$(GO) build -o bin/joist ./cmd/joist

.PHONY: run
run: manifests generate ## Run the manager against the cluster in $KUBECONFIG.
	$(GO) run ./cmd/joist

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build -t $(IMG) .

##@ Benchmarks

# `make bench BENCH=BenchmarkSolve/diverse BENCHTIME=1x` narrows the run.
BENCH ?= BenchmarkSolve
BENCHTIME ?= 3x
# Extra flags for bench/upstream, e.g. BENCH_UPSTREAM_ARGS="-sizes 1000,5000 -markdown".
BENCH_UPSTREAM_ARGS ?=

.PHONY: bench
bench: ## Run Joist's solver benchmarks (pods/s, nodes, $/h, $/h ÷ lower bound).
	$(GO) test ./solver -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -timeout 60m

.PHONY: bench-consolidation
bench-consolidation: ## Consolidation planner: 1,000 under-used nodes / 10,000 pods (time, nodes and $/h before/after, ÷ LP bound) and 1,000 full nodes (time to "no command").
	$(GO) test ./solver -run '^$$' -bench 'BenchmarkConsolidation' -benchtime $(BENCHTIME) -timeout 30m

.PHONY: bench-upstream
bench-upstream: ## Run Joist's solver and upstream Karpenter's scheduler side by side (module bench/upstream).
	cd bench/upstream && GOTOOLCHAIN=go1.27.3 $(GO) run . $(BENCH_UPSTREAM_ARGS)

##@ Demo

DEMO_FLAGS ?=

.PHONY: demo
demo: k8s-assets ## Run Joist end to end on a local control plane with simulated (KWOK) nodes; Ctrl-C stops it.
	$(GO) build -o bin/joist ./cmd/joist
	$(GO) run ./test/demo $(DEMO_FLAGS)

.PHONY: bench-e2e
bench-e2e: k8s-assets ## 1,000 pods end to end on fresh control planes: time to first NodeClaim and to all Running, nodes, $/h, manager RSS and CPU.
	$(GO) build -o bin/joist ./cmd/joist
	$(GO) run ./test/benche2e $(BENCH_E2E_ARGS)
