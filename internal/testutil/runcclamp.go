package testutil

// RuncClamped returns a script that runs runc, with what this machine
// cannot grant taken out of the bundle's config.json first. This machine
// lacks CAP_SYS_RESOURCE: no process may lower its oom_score_adj, which
// the kubelet asks -997 for a node-critical pod (the installer's Jobs)
// and CRI-O -998 for an infra container, and no container may hold the
// capability, which CRI-O gives a privileged container (the installer's
// Jobs) with every other one the kernel knows. The containerd sandboxes
// clamp the first with restrict_oom_score_adj and give a privileged
// container only the capabilities containerd holds; CRI-O has neither
// setting, so its runtime, this script, sets an oom_score_adj below 0 to
// 0 and CAP_SYS_RESOURCE to CAP_CHOWN (which every container has).
//
// A CRI-O node's default runtime (crionode.go) and the runc a shim v2
// finds on its PATH under CRI-O (crioconfig's real tests) are this
// script. A real node does neither.
func RuncClamped(runc string) []byte {
	return []byte(`#!/bin/sh
# runc, an oom_score_adj below 0 made 0 and CAP_SYS_RESOURCE made
# CAP_CHOWN first (testutil.RuncClamped: this machine lacks
# CAP_SYS_RESOURCE).
prev=
for a; do
	if [ "$prev" = "--bundle" ] || [ "$prev" = "-b" ]; then
		[ -f "$a/config.json" ] && sed -i -E -e 's/("oomScoreAdj": *)-[0-9]+/\10/' -e 's/"CAP_SYS_RESOURCE"/"CAP_CHOWN"/g' "$a/config.json"
	fi
	prev=$a
done
exec ` + runc + ` "$@"
`)
}
