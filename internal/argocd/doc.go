// Package argocd runs Argo CD's resource health checks (Lua scripts in
// the format of Argo CD's resource_customizations) as Argo CD does: the
// resource as the global obj, the script returning a table with status
// and message. The tests run shimkit's check of the Shim
// (operator/config/argocd) on its test cases and on the statuses the
// operator writes, so that what Argo CD shows is what the operator says.
package argocd
