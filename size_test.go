package shimkit_test

import (
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestTypeSizes: no type of the module, test helpers included, has more
// than 15 methods, promoted ones counted (issue #36: the operator's
// Reconciler had 71; #37: installer.Installer had 56).
func TestTypeSizes(t *testing.T) { testutil.CheckTypeSizes(t, ".", 15, 250) }
