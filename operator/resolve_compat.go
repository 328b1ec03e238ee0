package operator

import "github.com/shimkit/shimkit/internal/operator/pin"

// The artifact resolvers live in package pin; these names keep the
// operator's Options.Resolver readable and its API as it was.
type (
	// Resolver pins a Shim's artifact once per spec (pin.Resolver).
	Resolver = pin.Resolver
	// ResolveInput is what a Resolver needs of a Shim (pin.Input).
	ResolveInput = pin.Input
	// Resolved pins an artifact (pin.Resolved).
	Resolved = pin.Resolved
	// ArtifactResolver is the reference Resolver (pin.ArtifactResolver).
	ArtifactResolver = pin.ArtifactResolver
	// StaticResolver is the in-memory Resolver (pin.StaticResolver).
	StaticResolver = pin.StaticResolver
)
