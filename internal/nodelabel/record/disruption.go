package record

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DisruptionKey is the node annotation that records a Shim's disruption
// of the node (its rolloutStrategy.disruption):
// disruption.shim.containerd.x-k8s.io/<shim>. Its value is when the node
// was cordoned for the Shim (RFC 3339), and ",cordoned" when the Shim set
// the cordon itself (the node was schedulable): only then does the Shim
// lift it.
func DisruptionKey(shim string) string { return "disruption." + Key(shim) }

// Disrupted is a node's record of a Shim's disruption: since when, and
// whether the Shim set the cordon.
type Disrupted struct {
	Since    time.Time
	Cordoned bool
}

// DisruptedBy reads the Shim's disruption record on the node (false:
// none, or one that does not parse, which counts as none of the Shim's).
func DisruptedBy(n *corev1.Node, shim string) (Disrupted, bool) {
	v, ok := n.Annotations[DisruptionKey(shim)]
	if !ok {
		return Disrupted{}, false
	}
	at, own := strings.CutSuffix(v, ",cordoned")
	since, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return Disrupted{}, false
	}
	return Disrupted{Since: since, Cordoned: own}, true
}

// Value is the annotation's value of d.
func (d Disrupted) Value() string {
	v := d.Since.UTC().Format(time.RFC3339)
	if d.Cordoned {
		v += ",cordoned"
	}
	return v
}
