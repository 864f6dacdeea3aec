# Joist — Kubernetes node autoscaler. `make help` lists the targets.

# Release version: the image tag, the ldflags version and the OLM bundle's CSV version.
VERSION ?= 0.1.0
IMG ?= ghcr.io/joist-dev/joist:v$(VERSION)
BUNDLE_IMG ?= ghcr.io/joist-dev/joist-bundle:v$(VERSION)
BUNDLE_CHANNEL ?= candidate
KUBECTL ?= kubectl
GO ?= go
CONTROLLER_GEN ?= $(GO) tool controller-gen

# Control-plane binaries built from Go modules (hack/k8s-assets), cached per Kubernetes version.
KUBE_VERSION := $(shell awk '$$1=="k8s.io/kubernetes"{sub(/^v/,"",$$2); print $$2}' hack/k8s-assets/go.mod)
K8S_ASSETS := $(CURDIR)/bin/k8s/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS := $(K8S_ASSETS)

# Packages controller-gen reads markers from (bench/upstream is a separate module on a newer Go).
GEN_PATHS := {./api/...,./cloudprovider/...,./controllers/...,./webhooks/...}

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
manifests: ## Generate CRDs, RBAC and webhook manifests from markers, and the Helm chart's copies of them (charts/joist crds/ and files/).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="$(GEN_PATHS)" output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/chart/cmd -config config -chart charts/joist

.PHONY: generate
generate: ## Generate DeepCopy methods from markers.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify
verify: manifests generate bundle ## Fail when generated files (CRDs, RBAC, webhooks, DeepCopy, bundle/, the chart's copies) are out of date, or an import points the wrong way (hack/imports).
	@test -z "$$(git status --porcelain -- config api bundle bundle.Dockerfile charts)" || (git status --short -- config api bundle bundle.Dockerfile charts; echo "generated files are stale or uncommitted: run 'make manifests generate bundle' and commit"; exit 1)
	@bash hack/imports/check.sh

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
test: k8s-assets verify vet ## Run all tests against a real control plane (after checking generated files are committed).
	$(GO) build -o bin/joist ./cmd/joist
	JOIST_BINARY=$(CURDIR)/bin/joist $(GO) test ./... -timeout $(TEST_TIMEOUT) $(TESTFLAGS)
	$(GO) test -race ./controllers/... ./solver/... -timeout $(TEST_TIMEOUT) $(TESTFLAGS)
	$(MAKE) test-upstream-hash

.PHONY: test-unit
test-unit: ## Fast developer tier: every package whose tests need no control plane (hack/testtiers/unit-packages.sh), with -short (plan-quality and exhaustive tests at size skip; make test runs them); no k8s-assets, no generated-file check.
	$(GO) test -short $$(hack/testtiers/unit-packages.sh) -timeout 10m $(TESTFLAGS)

.PHONY: test-upstream-hash
test-upstream-hash: ## Joist's NodePool and EC2NodeClass hashes equal Karpenter's own (v1.15) on 10,000 random objects each; Karpenter's metric list (controllers/metrics/testdata) and adoption fixture (test/e2e/testdata) are current (module bench/upstream, Go 1.27).
	cd bench/upstream && GOTOOLCHAIN=go1.27.3 $(GO) test -run 'HashIsKarpenters|SampleNodePoolHash|FixtureIsUpstreams|FixtureIsKarpenters' -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) . ./ec2nodeclasshash ./karpentermetrics ./karpenteradoption

# Long reliability suites: `make test-reliability FUZZTIME=5m RELIABILITY_RUN=TestCrash` narrows them.
FUZZTIME ?= 2m
RELIABILITY_RUN ?= .
RELIABILITY_REPORT ?= $(CURDIR)/bin/reliability-report.md
FUZZ_TARGETS := ./solver:FuzzSolve ./solver:FuzzSolveHugeQuantities ./policy:FuzzValidateNodePool ./policy:FuzzDefaultPod \
	./policy:FuzzMergeGuardrails ./catalog:FuzzParse ./cmd/joist/simulate:FuzzLoadDocument

.PHONY: test-reliability
test-reliability: k8s-assets ## Long reliability suites (crash, cloud faults, scale) and every fuzz target for FUZZTIME; figures go to bin/reliability-report.md (see docs/reliability.md).
	$(GO) build -o bin/joist ./cmd/joist
	rm -f $(RELIABILITY_REPORT)
	JOIST_BINARY=$(CURDIR)/bin/joist RELIABILITY_LONG=1 RELIABILITY_REPORT=$(RELIABILITY_REPORT) \
		$(GO) test ./test/reliability -run '$(RELIABILITY_RUN)' -count=1 -v -timeout 300m
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzzing $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

##@ Build

LDFLAGS := -X main.version=$(VERSION)

.PHONY: build
build: manifests generate fmt vet ## Build the manager binary.
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/joist ./cmd/joist

.PHONY: run
run: manifests generate ## Run the manager against the cluster in $KUBECONFIG.
	$(GO) run ./cmd/joist

.PHONY: docker-build
docker-build: ## Build the manager image (needs a Docker engine; these dev machines have none).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image (needs a Docker engine).
	docker push $(IMG)

##@ Deployment

# The kustomize directory `make deploy` installs: config/default (the aws provider: patch in CLUSTER_NAME etc., see
# docs/aws.md) or config/kwok (the KWOK provider, with its permission to create Nodes).
DEPLOY_DIR ?= config/default
# The namespace and extra flags of `make helm-install`.
HELM_NAMESPACE ?= joist-system
HELM_ARGS ?=

.PHONY: deploy
deploy: manifests ## Install Joist into the cluster in $KUBECONFIG with kustomize (needs cert-manager; DEPLOY_DIR=config/kwok for KWOK; see README).
	$(KUBECTL) apply --server-side -k $(DEPLOY_DIR)

.PHONY: undeploy
undeploy: ## Remove what `make deploy` installed (CRDs included: their objects go too).
	$(KUBECTL) delete --ignore-not-found -k $(DEPLOY_DIR)

.PHONY: helm-lint
helm-lint: k8s-assets manifests ## Lint and render the Helm chart charts/joist with the Helm SDK over several value sets, and check it agrees with config/default and the bundle (part of make test).
	$(GO) test ./test/deploy -run 'TestChart|TestOneSource' -count=1

.PHONY: helm-install
helm-install: ## Install Joist into the cluster in $KUBECONFIG with Helm (HELM_ARGS="--set settings.clusterName=..."; see README).
	helm upgrade --install joist charts/joist --namespace $(HELM_NAMESPACE) --create-namespace $(HELM_ARGS)

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/manifests; validated by test/deploy.
	$(GO) run ./hack/bundle/cmd -config config -out bundle -dockerfile bundle.Dockerfile -version $(VERSION) -image $(IMG) -channel $(BUNDLE_CHANNEL)

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a Docker engine).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

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
bench-consolidation: ## Consolidation planner (CPU per plan, sets solved): 1,000 under-used nodes / 10,000 pods (nodes and $/h before/after, ÷ LP bound), issue #21's 1,000-node round-robin cluster (÷ the from-scratch plan) and 1,000 full nodes (time to "no command").
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

# Each Joist run alternates with a floor run (the planned nodes registered beforehand, no manager).
BENCH_E2E_ARGS ?= -floor

# Sizes as PODS/NODES; 20000/2000 and 50000/5000 need several GiB and an hour (see docs/scale.md).
BENCH_SCALE_ARGS ?= -sizes=1000/100,5000/1000

.PHONY: bench-scale
bench-scale: k8s-assets ## The manager at scale against a real apiserver (stand-in binder and node faker): peak RSS, CPU-s, apiserver requests by verb, time to all bound, nodes bought and empty, beside a floor. Report in bin/bench-scale.md.
	$(GO) build -o bin/joist ./cmd/joist
	$(GO) run ./test/benchscale $(BENCH_SCALE_ARGS)

.PHONY: bench-e2e
bench-e2e: k8s-assets ## 1,000 pods end to end on fresh control planes: time to first NodeClaim and to all Running, nodes, $/h, manager RSS and CPU, and as a multiple of the floor.
	$(GO) build -o bin/joist ./cmd/joist
	$(GO) run ./test/benche2e $(BENCH_E2E_ARGS)
