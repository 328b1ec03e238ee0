// Package classstep is the pure half of package runtimeclass: the
// RuntimeClass a spec publishes (Build), whose a RuntimeClass is (Owned,
// ConflictError), and what to write to one as read (Decide,
// DecideTakeover), without a client, a context or a clock. The operator's
// decision core decides its RuntimeClasses with it and links no client;
// package runtimeclass writes the steps (Apply) and is what users import:
// its types are these.
package classstep
