# shimkit — see README.md. `make test` is what CI runs; `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
# Every Go build of make compiles with -trimpath, as a release is built: the
# tests, the tools of hack/ and the release share one compile of each
# package (a cold make test compiles the dependency tree once for them all).
# And without DWARF, which no binary of make needs (a release and the
# external binaries link with -s -w, the tests with -w): 14 % less compile
# time (BENCHMARKS.md).
export GOFLAGS := $(strip $(GOFLAGS) -trimpath -gcflags=all=-dwarf=false)
# Real-parts tests need root. No package may need more than half of it on
# a fresh 2-core machine: the longest, installer, took 1,182 s cold and
# 1,337 s warm there, 37 % of it (BENCHMARKS.md: each package's times).
TEST_TIMEOUT ?= 60m
FUZZTIME ?= 30s
TOOLBIN ?= $(CURDIR)/bin

# Developer tools, built from hack/tools/go.mod into bin/ (rebuilt when it changes).
GOTESTSUM := $(TOOLBIN)/gotestsum
CONTROLLER_GEN := $(TOOLBIN)/controller-gen
KUSTOMIZE := $(TOOLBIN)/kustomize
HELM := $(TOOLBIN)/helm

CHART := charts/shimkit

# The documentation and release tools, built from hack/tools/docs/go.mod.
CRD_REF_DOCS := $(TOOLBIN)/crd-ref-docs
CYCLONEDX_GOMOD := $(TOOLBIN)/cyclonedx-gomod
# Debian's mkdocs and mkdocs-material (.ci/run installs them).
MKDOCS ?= mkdocs

# The images `make image` builds and `make deploy`/`make run` use.
IMAGE_TAG ?= latest
IMG ?= shimkit-operator:$(IMAGE_TAG)
INSTALLER_IMG ?= shimkit-installer:$(IMAGE_TAG)

# The release: make release VERSION=vX.Y.Z (default: git describe) IMAGE_PREFIX=REGISTRY/shimkit/ writes to DIST.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null)
DIST ?= dist
IMAGE_PREFIX ?=
# What make release and make publish need is checked before anything is built.
ifneq ($(filter release publish,$(MAKECMDGOALS)),)
ifeq ($(VERSION),)
$(error VERSION=vX.Y.Z is required (git describe finds no tag))
endif
ifeq ($(IMAGE_PREFIX),)
$(error IMAGE_PREFIX=registry.example/shimkit/ is required: the registry and path the images are pushed to, which the chart pins)
endif
endif
CHART_REPO ?=
IMAGE_PLATFORMS ?=
PLUGIN_PLATFORMS ?=
PLAIN_HTTP ?=
# Stamped into the binaries of make image and make release (--version).
VERSION_LDFLAGS = -X github.com/shimkit/shimkit/internal/version.version=$(VERSION)

# The cluster of the current kubeconfig (KUBECONFIG=...), reached with this kubectl.
KUBECTL ?= kubectl

.PHONY: all help tools test test-release e2e demo plugin test-unit lint bins fuzz bench generate verify-generate verify-manifests api \
	image images docker-build chart verify-chart helm-lint install uninstall deploy undeploy run \
	docs docs-gen verify-docs release publish

## all: lint and test.
all: lint test

## help: list the targets, each with its one-line description.
help:
	@awk '/^## [a-z0-9-]+: / { t = $$2; sub(/:$$/, "", t); d = $$0; sub(/^## [a-z0-9-]+: /, "", d); printf "  %-17s %s\n", t, d }' $(MAKEFILE_LIST)

## bins: build and cache the external test binaries and the node sandbox's root filesystem.
# (kube-apiserver, etcd, kubelet, kube-controller-manager, kube-scheduler, kubectl,
# containerd 1.7/2.2/2.3, gVisor, CRI-O; a Debian root filesystem with systemd,
# and the CRI-O node's layer over it: Debian's conmon and crun.)
# The root filesystem is Debian's packages, downloaded and unpacked: it is
# built beside the compiles, not after them (44 s of a cold run).
bins:
	@{ hack/node-rootfs.sh && hack/node-crio-layer.sh; } & rootfs=$$!; \
	hack/bins.sh cluster; built=$$?; \
	wait $$rootfs || { echo "bins: the node root filesystem failed (above)" >&2; exit 1; }; \
	exit $$built

## tools: build the developer tools into bin/ (helm, kustomize, controller-gen, gotestsum, crd-ref-docs, cyclonedx-gomod).
# Built static (CGO_ENABLED=0) as the tests are: one compile of the standard
# library serves both, and no C compiler runs for them.
tools: $(HELM) $(KUSTOMIZE) $(CONTROLLER_GEN) $(GOTESTSUM) $(CRD_REF_DOCS) $(CYCLONEDX_GOMOD)

$(CRD_REF_DOCS): hack/tools/docs/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools/docs build -o $(CRD_REF_DOCS) github.com/elastic/crd-ref-docs

$(CYCLONEDX_GOMOD): hack/tools/docs/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools/docs build -o $(CYCLONEDX_GOMOD) github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

$(GOTESTSUM): hack/tools/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools build -o $(GOTESTSUM) gotest.tools/gotestsum

## test: everything CI runs: the chart and docs checks, unit, envtest, real containerd, the e2e cluster, fuzz seeds, a release.
# The chart and docs checks come first: they fail in seconds. The tests
# run under hack/reaper (a process a test started that outlives them is
# killed and fails make test), through hack/test.sh: it builds the test
# release (make test-release) beside them and checks it after them,
# outside any test's timeout.
# CGO_ENABLED=0: the binaries the tests build for images are static, and built
# with the same settings the packages share one compile (a cold run compiles
# the dependency tree once, not twice; chartgen, which links the operator,
# is built so too, as are the release's binaries for this machine).
# The three longest packages are named first, so that go test starts them
# first (it runs packages in the order given): listed in ./... order, the
# operator's envtests (10 minutes, one after another) started 8 minutes in
# and ran alone at the end.
LONGEST_TESTS := ./operator ./e2e ./installer
test: verify-chart helm-lint verify-docs bins $(GOTESTSUM) $(HELM) $(CYCLONEDX_GOMOD)
	CGO_ENABLED=0 $(GO) build -o $(TOOLBIN)/reaper ./hack/reaper
	CGO_ENABLED=0 GOTESTSUM=$(GOTESTSUM) TEST_TIMEOUT=$(TEST_TIMEOUT) TEST_RELEASE=$(TEST_RELEASE) LONGEST_TESTS='$(LONGEST_TESTS)' \
	  MAKE='$(MAKE)' $(TOOLBIN)/reaper -- hack/test.sh

## test-release: the release hack/releasetest checks, in bin/test-release: both image platforms, the plugin for linux and darwin (rebuilt when the tree changes).
# One cross build for every test: the arm64 images, a darwin plugin, the
# indexes of two platforms and an SBOM per platform are checked on it
# (TestCrossRelease); the tests that publish a release build it for this
# machine alone, from packages the tests compile anyway. The other
# platforms' binaries compile without optimisation (CROSS_GCFLAGS): what
# the check reads of them (their format and platform, the indexes, the
# SBOMs, the licenses) does not depend on it, and their compile, the
# build's time, is a fifth shorter. The plugin is built for this machine
# and darwin/arm64 only: a linux/arm64 plugin would prove nothing the arm64
# images and the darwin plugin do not, and compile 107 packages more for
# arm64. Keyed by the working tree (tracked and untracked files): a second
# make test reuses it.
TEST_RELEASE := $(TOOLBIN)/test-release
TEST_RELEASE_VERSION := v0.0.0-test
TEST_RELEASE_PLUGIN_PLATFORMS := linux/amd64 darwin/arm64
test-release: $(HELM) $(CYCLONEDX_GOMOD)
	@key=$$(hack/treekey.sh); \
	if [ "$$(cat $(TEST_RELEASE).tree 2>/dev/null)" = "$$key" ]; then echo "test-release: $(TEST_RELEASE) is of this tree"; exit 0; fi; \
	rm -rf $(TEST_RELEASE) $(TEST_RELEASE).tree; \
	VERSION=$(TEST_RELEASE_VERSION) DIST=$(TEST_RELEASE) IMAGE_PREFIX=registry.example/shimkit/ PLUGIN_PLATFORMS='$(TEST_RELEASE_PLUGIN_PLATFORMS)' CROSS_GCFLAGS='all=-N -l -dwarf=false' \
	  GO='$(GO)' HELM='$(HELM)' CYCLONEDX_GOMOD='$(CYCLONEDX_GOMOD)' hack/release.sh && \
	echo "$$key" >$(TEST_RELEASE).tree

## demo: a local single-node cluster, the operator, a sample Shim rolled out and a pod on it.
# Keeps the cluster until Ctrl-C (UNATTENDED=1 tears it down at the end).
demo: bins
	@echo "demo: compiling the demo (a first run compiles the operator's dependencies: minutes; each step then prints the seconds since it began)"
	set -o pipefail; SHIMKIT_DEMO_UNATTENDED=$(UNATTENDED) $(GO) test -tags demo -run '^TestDemo$$' -count=1 -timeout 0 -v ./e2e/ 2>&1 | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$$' -e '^ok '

## e2e: the end-to-end scenarios on a real three-node cluster, the Helm chart's included (part of make test).
e2e: bins $(GOTESTSUM) $(HELM) $(KUSTOMIZE) $(CYCLONEDX_GOMOD)
	CGO_ENABLED=0 $(GOTESTSUM) --format testname -- -count=1 -timeout $(TEST_TIMEOUT) ./e2e/...

## test-unit: tests that need no external binary.
test-unit: $(GOTESTSUM)
	$(GOTESTSUM) --format testname -- -short -count=1 ./...

$(CONTROLLER_GEN): hack/tools/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: deepcopy functions, the CRD and the RBAC role from the API types and markers (controller-gen).
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./operator/api/...
	$(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:artifacts:config=operator/config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=shimkit-operator paths=./operator/... paths=./internal/operator/... output:rbac:artifacts:config=operator/config/rbac

## notice: rewrite NOTICE, the notices of the modules the release links (make test fails while it differs: review, then commit it).
notice:
	CGO_ENABLED=0 $(GO) run ./hack/notice

## api: rewrite api/, the exported API of the public packages (make test fails while it differs: review the change, then commit api/).
api:
	CGO_ENABLED=0 $(GO) run ./hack/apilist -out api

## verify-generate: fail when the generated files are not up to date.
verify-generate: generate
	@git diff --exit-code -- operator/api operator/config/crd operator/config/rbac/role.yaml || { echo "run make generate and commit"; exit 1; }

$(KUSTOMIZE): hack/tools/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools build -o $(KUSTOMIZE) sigs.k8s.io/kustomize/kustomize/v5

## verify-manifests: the kustomizations under operator/config build.
verify-manifests: $(KUSTOMIZE)
	$(KUSTOMIZE) build operator/config/default >/dev/null
	$(KUSTOMIZE) build operator/config/samples >/dev/null

## lint: gofmt, go vet and golangci-lint (built from the tools module).
lint: verify-manifests
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) -C hack/tools build -o $(TOOLBIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	$(TOOLBIN)/golangci-lint run ./...

## fuzz: run every fuzz target for FUZZTIME each.
# Minimization is capped: an uncapped minimization of a slow target stalls the
# fuzzer for a minute with no executions.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

## plugin: the kubectl plugin kubectl-shimkit into bin/ (put it on the PATH: kubectl shimkit status NAME, kubectl shimkit plan -f FILE).
plugin:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(TOOLBIN)/kubectl-shimkit ./cmd/kubectl-shimkit

# Every image carries the license and the notices (/licenses) and says so
# in its label org.opencontainers.image.licenses.
IMAGE_LEGAL := -license Apache-2.0 -legal LICENSE -legal NOTICE

## image: the operator (IMG=) and installer (INSTALLER_IMG=) images as tarballs in bin/, no Docker engine needed.
# Load them with `ctr -n k8s.io images import`, `docker load` or `kind load image-archive`.
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(TOOLBIN)/shimkit-installer ./cmd/shimkit-installer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(TOOLBIN)/shimkit-operator ./cmd/shimkit-operator
	$(GO) run ./hack/imagebuild -binary $(TOOLBIN)/shimkit-installer -name shimkit-installer -ref $(INSTALLER_IMG) $(IMAGE_LEGAL) -out $(TOOLBIN)/shimkit-installer.tar
	$(GO) run ./hack/imagebuild -binary $(TOOLBIN)/shimkit-operator -name shimkit-operator -user 65532 -ref $(IMG) $(IMAGE_LEGAL) -out $(TOOLBIN)/shimkit-operator.tar

## images: the same as image; IMAGE_TAG= (default latest, what the manifests and the chart expect) tags both.
images: image

## docker-build: the same as image (no Docker engine needed either).
docker-build: image

## release: VERSION=vX.Y.Z: multi-platform image indexes, the chart pinning them, plugin archives, SBOMs, sha256sums.txt in DIST (dist/).
# IMAGE_PREFIX=registry.example/shimkit/ names the images (and the chart's defaults) under a registry;
# IMAGE_PLATFORMS= (default linux/amd64 linux/arm64) the images' platforms.
release: $(HELM) $(CYCLONEDX_GOMOD)
	VERSION='$(VERSION)' DIST='$(DIST)' IMAGE_PREFIX='$(IMAGE_PREFIX)' IMAGE_PLATFORMS='$(IMAGE_PLATFORMS)' PLUGIN_PLATFORMS='$(PLUGIN_PLATFORMS)' GO='$(GO)' HELM='$(HELM)' CYCLONEDX_GOMOD='$(CYCLONEDX_GOMOD)' hack/release.sh

## publish: push the release of make release (same VERSION, IMAGE_PREFIX, DIST) to its registry: images, then the chart to oci://CHART_REPO.
# CHART_REPO defaults to IMAGE_PREFIX's registry and path, then charts; PLAIN_HTTP=1 for a loopback registry.
publish: $(HELM)
	VERSION='$(VERSION)' DIST='$(DIST)' IMAGE_PREFIX='$(IMAGE_PREFIX)' CHART_REPO='$(CHART_REPO)' PLAIN_HTTP='$(PLAIN_HTTP)' GO='$(GO)' HELM='$(HELM)' hack/publish.sh

## bench: the benchmarks behind BENCHMARKS.md.
bench: bins
	$(GO) test -run '^$$' -bench . -benchmem ./...

# About 5½ minutes on 2 cores with an empty Go build cache.
$(HELM): hack/tools/go.mod
	CGO_ENABLED=0 $(GO) -C hack/tools build -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$$($(GO) -C hack/tools list -m -f '{{.Version}}' helm.sh/helm/v4)" -o $(HELM) helm.sh/helm/v4/cmd/helm

## chart: write the chart's generated parts (CRDs, RBAC rules, security contexts, probes, sample) from operator/config.
chart: $(KUSTOMIZE)
	CGO_ENABLED=0 $(GO) run ./hack/chartgen -kustomize $(KUSTOMIZE) -chart $(CHART)

## verify-chart: fail when the chart drifted from operator/config or leaves a flag of shimkit-operator unset.
verify-chart: $(KUSTOMIZE) $(HELM)
	CGO_ENABLED=0 $(GO) run ./hack/chartgen -verify -kustomize $(KUSTOMIZE) -helm $(HELM) -chart $(CHART)

## docs-gen: write the site's generated references (docs/reference: API, metrics, flags, Helm values, reasons, examples) from the code, and the pages' figures from BENCHMARKS.md.
docs-gen: $(CRD_REF_DOCS)
	CGO_ENABLED=0 $(GO) run ./hack/docgen -crd-ref-docs $(CRD_REF_DOCS) -out docs/reference
	CGO_ENABLED=0 $(GO) run ./hack/figures

## docs: the documentation site in site/ (mkdocs build --strict), its links, anchors and nav checked.
docs:
	$(MKDOCS) build --strict --quiet --site-dir site
	CGO_ENABLED=0 $(GO) run ./hack/docscheck -site site

## verify-docs: fail when a page's figure is not BENCHMARKS.md's, a generated reference drifted from the code, or the site does not build (make docs).
verify-docs: $(CRD_REF_DOCS)
	CGO_ENABLED=0 $(GO) run ./hack/figures -verify
	CGO_ENABLED=0 $(GO) run ./hack/docgen -verify -crd-ref-docs $(CRD_REF_DOCS) -out docs/reference
	$(MAKE) --no-print-directory docs

## helm-lint: helm lint and helm template of the chart, with its defaults and with every value set.
helm-lint: $(HELM)
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/all-values.yaml
	$(HELM) template shimkit $(CHART) --namespace shimkit-system --include-crds >/dev/null
	$(HELM) template shimkit $(CHART) --namespace shimkit-system --include-crds -f $(CHART)/ci/all-values.yaml >/dev/null

## install: install the CRDs into the cluster of the current kubeconfig.
install: $(KUSTOMIZE)
	$(KUSTOMIZE) build operator/config/crd | $(KUBECTL) apply --server-side -f -
	@# kubectl wait fails, rather than waits, on a CRD whose status has no
	@# conditions yet (just created): wait for the status first (10 s at most).
	@n=0; until [ -n "$$($(KUBECTL) get crd/shims.containerd.x-k8s.io -o jsonpath='{.status.conditions}')" ]; do \
	  n=$$((n + 1)); [ $$n -lt 50 ] || { echo "install: crd/shims.containerd.x-k8s.io has no status conditions after 10 s"; exit 1; }; sleep 0.2; done
	$(KUBECTL) wait --for=condition=Established crd/shims.containerd.x-k8s.io --timeout=60s

## uninstall: delete the CRDs from that cluster; refused while Shims exist (delete them while the operator runs).
uninstall: $(KUSTOMIZE)
	@if shims=$$($(KUBECTL) get shims.containerd.x-k8s.io -o name 2>/dev/null) && [ -n "$$shims" ]; then \
	  echo "uninstall: Shims remain:" $$shims; echo "delete them while the operator runs (it cleans their nodes), then make uninstall"; exit 1; fi
	$(KUSTOMIZE) build operator/config/crd | $(KUBECTL) delete --ignore-not-found -f -

## deploy: deploy the operator (operator/config/default, CRDs included) with IMG= and INSTALLER_IMG= to that cluster.
deploy: $(KUSTOMIZE)
	KUSTOMIZE=$(KUSTOMIZE) KUBECTL=$(KUBECTL) IMG=$(IMG) INSTALLER_IMG=$(INSTALLER_IMG) hack/deploy.sh apply

## undeploy: remove the operator and its namespace from that cluster; the CRDs and Shims stay (make uninstall).
undeploy: $(KUSTOMIZE)
	KUSTOMIZE=$(KUSTOMIZE) KUBECTL=$(KUBECTL) IMG=$(IMG) INSTALLER_IMG=$(INSTALLER_IMG) hack/deploy.sh delete

RUN_ARGS ?=

## run: run the operator here against the current kubeconfig's cluster (make install first; RUN_ARGS= adds flags).
# Its installer Jobs go to POD_NAMESPACE (default shimkit-system), which must exist for a rollout.
run:
	$(GO) run ./cmd/shimkit-operator --installer-image=$(INSTALLER_IMG) \
	  --metrics-bind-address=127.0.0.1:8080 --health-probe-bind-address=127.0.0.1:8081 $(RUN_ARGS)
