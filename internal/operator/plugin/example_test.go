package plugin_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/shimkit/shimkit/internal/operator/plugin"
)

// Run is the whole of kubectl-shimkit's main; a wrong command line is
// exit code 2, with the usage on stderr.
func ExampleRun() {
	code := plugin.Run(context.Background(), []string{"status"}, os.Getenv, os.Stdout, io.Discard)
	fmt.Println("exit", code)
	// Output:
	// exit 2
}
