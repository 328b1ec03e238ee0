// Command shimkit-operator is the reference Shim operator; see package
// operator/manager. Its subcommand migrate (shimkit-operator migrate
// [--apply]) maps runtime-class-manager's Shims to shimkit Shims; see
// package operator/migrate.
package main

import (
	"fmt"
	"os"
	// The maintenance windows' time zones (spec.rolloutStrategy.windows)
	// on an image without /usr/share/zoneinfo.
	_ "time/tzdata"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/shimkit/shimkit/internal/frontend/manager"
	"github.com/shimkit/shimkit/internal/frontend/migrate"
	"github.com/shimkit/shimkit/internal/version"
)

func main() {
	// --version alone prints on stdout, for scripts; among other flags
	// the manager's flag prints it on stderr.
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(version.String("shimkit-operator"))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		os.Exit(migrate.Run(ctrl.SetupSignalHandler(), os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	manager.Main()
}
