# kcm: kube-controller-manager rebuilt on controller-runtime.
# `make run` and `make test` are the two commands; everything else is what they need.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

K8S_VERSION ?= 1.37.1
ETCD_VERSION ?= 3.7.0
LOCALBIN ?= $(CURDIR)/bin
K8S_BIN ?= $(LOCALBIN)/k8s/$(K8S_VERSION)
K8S_TOOLS := $(CURDIR)/hack/tools/k8s
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION)

KWOK_VERSION ?= v0.8.0
KWOK ?= $(LOCALBIN)/kwok-$(KWOK_VERSION)
KUBECTL ?= $(K8S_BIN)/kubectl
# Upstream's kube-controller-manager, built like the API server, for `make bench`.
UPSTREAM_KCM ?= $(K8S_BIN)/kube-controller-manager
BENCH_ARGS ?=

# The version kcm reports: `git describe` when a tag is reachable (v0.2.0, v0.2.0-3-gabc1234,
# -dirty with uncommitted changes), v0.1.0-dev otherwise. Expanded once, not at each use.
ifeq ($(origin KCM_VERSION),undefined)
KCM_VERSION := $(or $(shell git describe --tags --dirty 2>/dev/null),v0.1.0-dev)
endif
KCM_LDFLAGS := -X github.com/kcm/kcm/internal/version.gitVersion=$(KCM_VERSION)
IMG ?= kcm:dev
# What `make deploy` applies: config/default, or an overlay such as config/control-plane.
DEPLOY_CONFIG ?= config/default

# Tests find the control plane through KUBEBUILDER_ASSETS, like any envtest suite.
export KUBEBUILDER_ASSETS := $(K8S_BIN)

.PHONY: all
all: build

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

##@ The two commands

# Fake nodes of `make run`'s local cluster.
NODES ?= 3

.PHONY: run
run: build k8s-bins kwok ## Run kcm: against KUBECONFIG or --kubeconfig in ARGS if given, else on a fresh local cluster (NODES=3 KWOK nodes, kube-scheduler) as kubeadm runs it.
	@if [ -n "$$KUBECONFIG" ] && [[ "$(ARGS)" != *--kubeconfig* ]]; then \
		exec $(LOCALBIN)/kcm --kubeconfig="$$KUBECONFIG" $(ARGS); \
	elif [[ "$(ARGS)" == *--kubeconfig* ]]; then \
		exec $(LOCALBIN)/kcm $(ARGS); \
	else \
		go build -o $(LOCALBIN)/localplane ./hack/localplane; \
		exec $(LOCALBIN)/localplane -kcm $(LOCALBIN)/kcm -kwok $(KWOK) -assets $(K8S_BIN) -nodes $(NODES) -dir $(LOCALBIN)/localplane.d -- $(ARGS); \
	fi

.PHONY: test
test: k8s-bins kwok fmt vet ## Unit tests and envtest suites against the real kube-apiserver.
	KWOK=$(KWOK) go test ./... -count=1 -timeout 30m

.PHONY: e2e
e2e: k8s-bins kwok build $(UPSTREAM_KCM) ## End-to-end specs: a local cluster (etcd, kube-apiserver, kube-scheduler, KWOK nodes) with bin/kcm as a process; and the benchmark at a smoke size.
	KWOK=$(KWOK) KCM_BINARY=$(LOCALBIN)/kcm UPSTREAM_KCM=$(UPSTREAM_KCM) go test -tags e2e ./test/e2e/ -count=1 -timeout 30m

.PHONY: chaos
chaos: k8s-bins kwok build $(UPSTREAM_KCM) ## Fault-injection suite (test/chaos): kcm, then upstream, through 429s, 5xx, latency, cut watches with compaction, API server and etcd restarts, a partitioned leader; table on stdout, JSON in bin/chaos/result.json. CHAOS_FORM=short (CI: each fault once, small, kcm only), CHAOS_MANAGERS=kcm.
	KWOK=$(KWOK) KCM_BINARY=$(LOCALBIN)/kcm UPSTREAM_KCM=$(UPSTREAM_KCM) go test -tags chaos ./test/chaos/ -count=1 -timeout 80m -v

.PHONY: bench
bench: k8s-bins kwok build $(UPSTREAM_KCM) ## kcm side by side with upstream kube-controller-manager: 500 Deployments x 4 replicas on 50 KWOK nodes, per phase and a quiet minute (BENCH_ARGS="-deployments=100 ...", "-memory-slope=2000,10000,20000", "-profile"; -h lists them). Table on stdout, JSON in bin/bench/result.json.
	go run ./test/bench -kcm $(LOCALBIN)/kcm -upstream $(UPSTREAM_KCM) -assets $(K8S_BIN) -kwok $(KWOK) -out $(LOCALBIN)/bench/result.json -logs $(LOCALBIN)/bench/logs $(BENCH_ARGS)

.PHONY: bench-scale
bench-scale: ## `make bench` at the large preset: -scale, 2,000 Deployments x 10 on 200 KWOK nodes at --kube-api-qps=400 --kube-api-burst=800, managers upstream, kcm and kcm-groups (three kcm replicas with --controller-groups=auto, against issue 40's goals) (BENCH_ARGS add to it or override it).
	$(MAKE) bench BENCH_ARGS="-scale $(BENCH_ARGS)"

.PHONY: bench-svm
bench-svm: k8s-bins $(UPSTREAM_KCM) ## storage-version-migrator-controller, kcm then upstream: one migration of a custom resource of 10,000 objects on an envtest API server (seconds, objects rewritten).
	KUBEBUILDER_ASSETS=$(K8S_BIN) UPSTREAM_KCM=$(UPSTREAM_KCM) go test ./test/bench/ -run '^$$' -bench BenchmarkStorageVersionMigration -benchtime 1x -timeout 40m

##@ Development

.PHONY: build
build: ## Build bin/kcm.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(KCM_LDFLAGS)' -o $(LOCALBIN)/kcm .

.PHONY: fmt
fmt: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: kubeadm-manifest
kubeadm-manifest: ## Regenerate kubeadm's kube-controller-manager static pod (config/kubeadm/testdata) from kubeadm's code.
	cd $(K8S_TOOLS) && go run ./cmd/kubeadm-manifest > $(CURDIR)/config/kubeadm/testdata/kubeadm-kube-controller-manager.yaml

.PHONY: upstream-flags
upstream-flags: ## Regenerate the list of upstream kube-controller-manager flags and feature gates, its controllers and the gates each requires (the registry's test), and /configz's flag table.
	cd $(K8S_TOOLS) && go run ./cmd/upstream-facts > $(CURDIR)/internal/options/zz_generated.upstream_flags.go
	cd $(K8S_TOOLS) && go run ./cmd/upstream-facts -features > $(CURDIR)/internal/features/zz_generated.features.go
	cd $(K8S_TOOLS) && go run ./cmd/upstream-facts -controller-gates > $(CURDIR)/internal/controller/zz_generated.upstream_controllers_test.go
	cd $(K8S_TOOLS) && go run ./cmd/upstream-configz -probe $(CURDIR)/internal/debugz/testdata/upstream-configz-probe.json > $(CURDIR)/internal/debugz/zz_generated.configz.go

.PHONY: upstream-families
upstream-families: ## Regenerate the list of metric families upstream kube-controller-manager registers (test/process checks kcm's /metrics against it).
	cd $(K8S_TOOLS) && go run ./cmd/upstream-families > $(CURDIR)/test/process/testdata/upstream-families.txt

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build --build-arg KCM_VERSION=$(KCM_VERSION) -t $(IMG) .

.PHONY: deploy
deploy: $(KUBECTL) ## Deploy DEPLOY_CONFIG (config/default) with image IMG into the cluster of the current kubeconfig, server-side.
	@# IMG is set by an overlay in a temporary directory (kustomize's images: name, tag or digest),
	@# so that the repository's config/ is never edited.
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	img='$(IMG)'; name="$$img"; tag=; digest=; \
	if [[ "$$img" == *@* ]]; then name="$${img%%@*}"; digest="$${img#*@}"; \
	elif [[ "$${img##*/}" == *:* ]]; then name="$${img%:*}"; tag="$${img##*:}"; else tag=latest; fi; \
	{ echo "resources:"; echo "- $$(realpath --relative-to="$$dir" '$(CURDIR)/$(DEPLOY_CONFIG)')"; \
	  echo "images:"; echo "- name: kcm"; echo "  newName: $$name"; \
	  if [ -n "$$tag" ]; then echo "  newTag: \"$$tag\""; fi; \
	  if [ -n "$$digest" ]; then echo "  digest: $$digest"; fi; } > "$$dir/kustomization.yaml"; \
	$(KUBECTL) kustomize "$$dir" | $(KUBECTL) apply --server-side -f -

##@ Tools, built once into bin/

.PHONY: k8s-bins
k8s-bins: $(K8S_BIN)/kube-apiserver $(K8S_BIN)/etcd $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl ## Build kube-apiserver, etcd, kube-scheduler and kubectl from their Go modules.

$(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl $(UPSTREAM_KCM):
	@mkdir -p $(K8S_BIN)
	cd $(K8S_TOOLS) && go build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8S_BIN)/etcd:
	@mkdir -p $(K8S_BIN)
	cd $(K8S_TOOLS) && go build -trimpath -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

.PHONY: kwok
kwok: $(KWOK)
$(KWOK):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	mv $(LOCALBIN)/kwok $@
