package operator

import "github.com/shimkit/shimkit/internal/operator/resolve"

// The artifact resolvers live in package resolve; these names keep the
// operator's Options.Resolver readable and its API as it was.
type (
	// Resolver pins a Shim's artifact once per spec (resolve.Resolver).
	Resolver = resolve.Resolver
	// ResolveInput is what a Resolver needs of a Shim (resolve.Input).
	ResolveInput = resolve.Input
	// Resolved pins an artifact (resolve.Resolved).
	Resolved = resolve.Resolved
	// ArtifactResolver is the reference Resolver (resolve.ArtifactResolver).
	ArtifactResolver = resolve.ArtifactResolver
	// StaticResolver is the in-memory Resolver (resolve.StaticResolver).
	StaticResolver = resolve.StaticResolver
)
