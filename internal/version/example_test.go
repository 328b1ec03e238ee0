package version_test

import (
	"fmt"
	"strings"

	"github.com/shimkit/shimkit/internal/version"
)

// A binary's --version line starts with its name and version.
func ExampleString() {
	line := version.String("shimkit-operator")
	fmt.Println(strings.HasPrefix(line, "shimkit-operator "+version.Version()+" (go"))
	// Output: true
}
