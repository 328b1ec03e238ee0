package plugin_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
)

// Run is the whole of kubectl-shimkit's main; a wrong command line is
// ExitUsage, found before the plugin connects to any cluster.
func ExampleRun() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: io.Discard}
	code := plugin.Run(context.Background(), []string{"status", "spin", "-o", "xml"}, streams)
	fmt.Println("exit", code)
	// Output:
	// exit 2
}
