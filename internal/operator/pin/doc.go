// Package pin pins a Shim's artifact to a digest before any node is
// planned, so that every node of a rollout installs the same bytes.
//
// It guarantees:
//   - a Shim whose spec pins every digest and asks for no signature is
//     pinned without a registry or a download;
//   - a tag or URL is resolved when the spec (its verification included),
//     the resolve annotation or the resolve interval asks, never mid-way
//     through a rollout because of a stale read: the pin made last stands
//     in for a status that lags behind;
//   - a failed resolution keeps the pinned digest (with its error) or,
//     without one, refuses the spec with a Degraded reason; it is not asked
//     again until what it read changes (spec, annotation, pull secret,
//     trusted root) or its backoff (DefaultBackoff, doubled per failure,
//     at most 10 minutes or the resolve interval) passed.
package pin
