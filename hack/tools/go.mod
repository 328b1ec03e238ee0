module github.com/shimkit/shimkit/hack/tools

// Developer tools, pinned here so the library's go.mod stays lean.

go 1.26.0

require (
	github.com/golangci/golangci-lint/v2 v2.15.0
	sigs.k8s.io/controller-tools v0.23.0
)

tool (
	github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	sigs.k8s.io/controller-tools/cmd/controller-gen
)
