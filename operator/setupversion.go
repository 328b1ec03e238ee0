package operator

import (
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// serverVersion asks the API server its gitVersion ("" when it cannot
// tell: every node then copies images).
func serverVersion(cfg *rest.Config) string {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return ""
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return ""
	}
	return v.GitVersion
}
