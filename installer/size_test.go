package installer_test

import (
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestTypeSizes: no type in installer/... has more than 15 methods
// (issue #37: Installer had 56, run 21).
func TestTypeSizes(t *testing.T) { testutil.CheckTypeSizes(t, ".", 15, 30) }
