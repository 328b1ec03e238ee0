package operator

import (
	"github.com/shimkit/shimkit/operator/nodeview"
)

// ForceRolloutAnnotation on a node ("true") lets it change outside the
// maintenance windows (spec.rolloutStrategy.windows): an admin's way to
// install, upgrade or uninstall one node now. A pause still holds it.
const ForceRolloutAnnotation = nodeview.ForceRolloutAnnotation
