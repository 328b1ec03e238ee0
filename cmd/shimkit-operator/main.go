// Command shimkit-operator is the reference Shim operator; see package
// operator/manager.
package main

import "github.com/shimkit/shimkit/operator/manager"

func main() { manager.Main() }
