package runtime

import (
	"context"
	"fmt"
)

// The optional roles below are asked for with a type assertion: a runtime
// without one does without what it serves.

// handlerChecker refuses, before anything changes, a handler the node's
// config defines and shimkit did not write, or a reserved name.
type handlerChecker interface {
	checkHandlers(e ConfigEdit, prev []string) error
}

// handlerFinder reports whether the runtime's config (the file shimkit
// writes the handler to) defines a handler: drift.
type handlerFinder interface {
	HasHandler(name string) (bool, error)
}

// PathFinder is the role of a runtime that may find shim binaries by name
// on its PATH (containerd 1.6, and a distribution that renders a runtime
// table for a binary it finds there): package bundle's PathFinder.
type PathFinder interface {
	NeedsLinks(ctx context.Context) (version string, needed bool)
	GeneratesRuntimeFor(bin string) bool
}

// PathFinder returns the runtime's PathFinder role: containerd's has one;
// CRI-O's and a caller's Runtime have none.
func (n *Node) PathFinder() (PathFinder, bool) {
	c, ok := n.Runtime.(*containerdRuntime)
	if !ok {
		return nil, false
	}
	return c, true
}

// CheckHandlers refuses, before anything changes, what the edit's handlers
// may not be on the runtime (reserved, unsupported, someone else's); prev
// are the handlers the Shim has. A runtime without the role checks
// nothing.
func (n *Node) CheckHandlers(e ConfigEdit, prev []string) error {
	c, ok := n.Runtime.(handlerChecker)
	if !ok {
		return nil
	}
	return c.checkHandlers(e, prev)
}

// HandlerDrift lists the handlers that the runtime's config (the file
// shimkit edits for each) no longer defines; a runtime that cannot tell
// (no HasHandler) finds none.
func (n *Node) HandlerDrift(handlers []string) ([]string, error) {
	f, ok := n.Runtime.(handlerFinder)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, h := range handlers {
		has, err := f.HasHandler(h)
		if err != nil {
			return out, fmt.Errorf("handler %s: %w", h, err)
		}
		if !has {
			out = append(out, "handler "+h+" is not in "+n.name()+"'s config")
		}
	}
	return out, nil
}

// name names the runtime in messages.
func (n *Node) name() string {
	if _, ok := n.Runtime.(*crioRuntime); ok {
		return "CRI-O"
	}
	return "containerd"
}
