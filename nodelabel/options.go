package nodelabel

// An Option adds to what a label write (Mark, MarkOn, SetState, Unmark)
// changes on the node, in the same request.
type Option func(*writeOptions)

type writeOptions struct {
	scheduling string
}

// WithSchedulingLabel writes key, a Shim's spec.schedulingLabel (the
// label its RuntimeClasses select), with the shim's own label: the same
// value, set and removed in the same request, so that the two never
// disagree. An empty key adds nothing.
func WithSchedulingLabel(key string) Option {
	return func(o *writeOptions) { o.scheduling = key }
}

// options applies opts.
func options(opts []Option) writeOptions {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
