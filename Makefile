# shimkit — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
# Real-parts tests need root; the whole suite stays well under 30 minutes.
TEST_TIMEOUT ?= 25m
FUZZTIME ?= 30s
TOOLBIN ?= $(CURDIR)/bin

.PHONY: all test e2e demo test-unit lint bins fuzz bench tools generate verify-generate verify-manifests images

all: lint test

## bins: build and cache the external test binaries (kube-apiserver, etcd, kubelet,
## kube-controller-manager, kube-scheduler, kubectl, containerd 1.7/2.2/2.3) and the node
## sandbox's Debian root filesystem.
bins:
	hack/bins.sh cluster
	hack/node-rootfs.sh

GOTESTSUM := $(TOOLBIN)/gotestsum

$(GOTESTSUM): hack/tools/go.mod
	$(GO) -C hack/tools build -o $(GOTESTSUM) gotest.tools/gotestsum

## test: everything CI runs: unit, envtest, real-containerd tests and the fuzz seed corpora.
test: bins $(GOTESTSUM)
	$(GOTESTSUM) --format testname -- -count=1 -timeout $(TEST_TIMEOUT) ./...

## demo: a local single-node cluster, the operator, a sample Shim rolled out and a pod on it;
## keeps the cluster until Ctrl-C (UNATTENDED=1 tears it down at the end).
demo: bins
	set -o pipefail; SHIMKIT_DEMO_UNATTENDED=$(UNATTENDED) $(GO) test -tags demo -run '^TestDemo$$' -count=1 -timeout 0 -v ./e2e/ 2>&1 | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$$' -e '^ok '

## e2e: the end-to-end test on a real single-node cluster (also part of make test).
e2e: bins $(GOTESTSUM)
	$(GOTESTSUM) --format testname -- -count=1 -timeout 20m ./e2e/...

## test-unit: tests that need no external binary.
test-unit: $(GOTESTSUM)
	$(GOTESTSUM) --format testname -- -short -count=1 ./...

CONTROLLER_GEN := $(TOOLBIN)/controller-gen

$(CONTROLLER_GEN): hack/tools/go.mod
	$(GO) -C hack/tools build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: deepcopy functions and the CRD from the API types (controller-gen).
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./operator/api/...
	$(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:artifacts:config=operator/config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=shimkit-operator paths=./operator/... output:rbac:artifacts:config=operator/config/rbac

## verify-generate: fail when the generated files are not up to date.
verify-generate: generate
	@git diff --exit-code -- operator/api operator/config/crd operator/config/rbac/role.yaml || { echo "run make generate and commit"; exit 1; }

KUSTOMIZE := $(TOOLBIN)/kustomize

$(KUSTOMIZE): hack/tools/go.mod
	$(GO) -C hack/tools build -o $(KUSTOMIZE) sigs.k8s.io/kustomize/kustomize/v5

## verify-manifests: the kustomizations under operator/config build.
verify-manifests: $(KUSTOMIZE)
	$(KUSTOMIZE) build operator/config/default >/dev/null
	$(KUSTOMIZE) build operator/config/samples >/dev/null

## lint: gofmt, go vet and golangci-lint (built from the tools module).
lint: verify-manifests
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) -C hack/tools build -o $(TOOLBIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	$(TOOLBIN)/golangci-lint run ./...

## fuzz: run every fuzz target for FUZZTIME each (minimization is capped: an uncapped
## minimization of a slow target stalls the fuzzer for a minute with no executions).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

IMAGE_TAG ?= latest

## images: the operator and installer images as tarballs in bin/, without a Docker engine
## (load them with `ctr -n k8s.io images import`, `docker load` or `kind load image-archive`).
images:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(TOOLBIN)/shimkit-installer ./cmd/shimkit-installer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(TOOLBIN)/shimkit-operator ./cmd/shimkit-operator
	$(GO) run ./hack/imagebuild -binary $(TOOLBIN)/shimkit-installer -name shimkit-installer -ref shimkit-installer:$(IMAGE_TAG) -out $(TOOLBIN)/shimkit-installer.tar
	$(GO) run ./hack/imagebuild -binary $(TOOLBIN)/shimkit-operator -name shimkit-operator -user 65532 -ref shimkit-operator:$(IMAGE_TAG) -out $(TOOLBIN)/shimkit-operator.tar

## bench: the benchmarks behind BENCHMARKS.md.
bench: bins
	$(GO) test -run '^$$' -bench . -benchmem ./...
