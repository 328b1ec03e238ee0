package operator_test

import (
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestTypeSizes: no type in operator/... has more than 15 methods (issue
// #36: Reconciler had 71).
func TestTypeSizes(t *testing.T) { testutil.CheckTypeSizes(t, ".", 15, 20) }
