package decide

import (
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Start is one installer Job the plan starts on a node: the node's plan
// for the operation, the node gate's reservation the Job needs (committed
// by the executor before it creates the Job: nodegate.Gate.Reserve), the
// partners a batch Job carries along, and the Normal Event (reason and
// action) of its start. Before are what is said before the Job is
// created, once the gate admits it (a drifted node's Warning, for the
// leader and each partner, and its count), After what is said once it is
// created (the node's note, each partner's Event): a start the gate
// refuses, or whose Job exists, says nothing. Hash is the spec hash the Job is labelled with,
// ImageWay how an image reaches the installer on the node
// (nodeview.ImageWay). Unlabel: the node leaves the RuntimeClass's
// selection first (an uninstall of a node labelled otherwise than
// uninstalling). Replaces is a finished Job of the name the start
// creates (an earlier round of the same operation, read in the
// snapshot), deleted first.
type Start struct {
	View           *NodeView
	Op             string
	Plan           *plan.NodePlan
	Reserve        nodegate.Reservation
	Partners       []Partner
	Reason, Action string
	Hash, ImageWay string
	Unlabel        bool
	Replaces       *batchv1.Job
	Before, After  []Action
}

// replacing notes on each start the finished Job of its name the
// snapshot read (a running one of the name is the start's own, from an
// earlier reconcile: creating it is refused, and nothing is deleted).
func replacing(obs *Snapshot, lists ...[]Start) {
	var byName map[string]*batchv1.Job
	for _, starts := range lists {
		for i := range starts {
			if byName == nil {
				byName = make(map[string]*batchv1.Job, len(obs.Jobs))
				for _, j := range obs.Jobs { // the operator's, in its namespace
					byName[j.Name] = j
				}
			}
			st := &starts[i]
			old := byName[jobview.JobName(obs.Shim.Name, st.View.Node.Name, st.Op, st.Hash)]
			if old != nil && !jobview.ViewOf(old).Running() {
				st.Replaces = old
			}
		}
	}
}

// telling fills in what each start says before and after its Job is
// created (Start.Before, Start.After).
func telling(obs *Snapshot, lists ...[]Start) {
	for _, starts := range lists {
		for i := range starts {
			st := &starts[i]
			node := st.View.Node
			if st.Op == jobview.OpInstall {
				st.Before = drifted(obs.Shim, nil, node, st.View.Drifted)
			}
			if len(st.Partners) == 0 {
				st.After = []Action{Note{Reason: st.Reason, Action: st.Action, Detail: fmt.Sprintf("node %s (Job %s)", node.Name, st.Reserve.Job)}}
				continue
			}
			names := make([]string, len(st.Partners))
			for k, p := range st.Partners {
				names[k] = p.Offer.Shim.Name
				st.Before = append(st.Before, drifted(p.Offer.Shim, p.Offer.Shim, node, p.Drifted())...)
				st.After = append(st.After, Notice{Type: corev1.EventTypeNormal, Reason: p.Reason, Action: "Install", Node: node, About: p.Offer.Shim,
					Note: fmt.Sprintf("node %s: with Shim %s in one installer run, one containerd restart (Job %s)", node.Name, obs.Shim.Name, st.Reserve.Job)})
			}
			st.After = append(st.After, Note{Reason: st.Reason, Action: "Install",
				Detail: fmt.Sprintf("node %s with Shims %s (Job %s)", node.Name, strings.Join(names, ", "), st.Reserve.Job)})
		}
	}
}

// drifted is the Warning Event Drifted of a node installed again because
// it drifted (what: what drifted; "": it did not, and nothing), and its
// count in the metrics, of shim (about: nil when it is the reconciled one).
func drifted(shim, about *v1alpha1.Shim, node *corev1.Node, what string) []Action {
	if what == "" {
		return nil
	}
	return []Action{
		Notice{Type: corev1.EventTypeWarning, Reason: "Drifted", Action: "Install", Node: node, About: about,
			Note: fmt.Sprintf("node %s drifted (%s): installing the shim again", node.Name, what)},
		CountDrift{Shim: shim.Name, Node: node.Name},
	}
}

// Partner is another Shim whose install a batch Job carries: its offer,
// its plan for the node and its Event reason there.
type Partner struct {
	Offer  *nodegate.Offer
	Plan   *plan.NodePlan
	Reason string
}

// Drifted is what drifted on the node the partner installs again ("":
// nothing).
func (p Partner) Drifted() string { return p.Offer.Drifted[p.Plan.Node] }

// installReason is the Normal Event reason of an install: Repairing a
// drifted node, Upgrading one that has an earlier version, else
// Installing.
func installReason(installed bool, drifted string) string {
	switch {
	case drifted != "":
		return "Repairing"
	case installed:
		return "Upgrading"
	}
	return "Installing"
}

// planInstalls reserves, in the gate view, the nodes the rollout starts,
// each with the Shims that offered the node and fit one installer run
// (batching); a node the view refuses waits.
func planInstalls(obs *Snapshot, d *Decision, gate *nodegate.View, r Rules) (out []Start, waiting bool) {
	leader := jobview.LabelValue(obs.Shim.Name)
	for _, name := range d.Rollin.Start {
		v := d.ByName[name]
		st := Start{View: v, Op: jobview.OpInstall, Plan: v.Plan, Reason: installReason(v.Installed(), v.Drifted), Action: OpAction(jobview.OpInstall),
			Hash: obs.Hash, ImageWay: nodeview.ImageWay(r.ServerVersion, v.Node)}
		st.Reserve = nodegate.Reservation{Node: v.Node.Name, Shim: leader, Job: jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpInstall, obs.Hash)}
		if r.Batching && v.Plan != nil && (v.Job == nil || !v.Job.Sibling()) {
			st.Partners = partners(obs, v, gate.Partners(v.Node.Name), r.Settings)
		}
		if len(st.Partners) > 0 {
			ids, members := []string{obs.Hash}, []string{leader}
			for _, p := range st.Partners {
				ids = append(ids, p.Offer.Shim.Name, p.Offer.Hash)
				members = append(members, jobview.LabelValue(p.Offer.Shim.Name))
				st.Reserve.Partners = append(st.Reserve.Partners, p.Offer)
			}
			st.Reserve.Job = jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpInstall, strings.Join(ids, "+"))
			st.Reserve.Members = members
		}
		if !gate.Admit(st.Reserve) {
			waiting = true
			continue
		}
		out = append(out, st)
	}
	return out, waiting
}

// partners are the offers of the node that fit the leader's installer
// run: the same credentials and trusted root to mount, a plan that
// builds, and no handler of the same name as the leader's or an earlier
// partner's.
func partners(obs *Snapshot, v *NodeView, offers []*nodegate.Offer, s shimspec.Settings) []Partner {
	var out []Partner
	taken := []*plan.NodePlan{v.Plan}
	for _, o := range offers {
		if shimspec.PullSecretName(o.Shim) != shimspec.PullSecretName(obs.Shim) || shimspec.TrustedRootRef(o.Shim) != shimspec.TrustedRootRef(obs.Shim) {
			continue
		}
		p, err := shimspec.Build(o.Shim, v.Node, plan.OpInstall, s, shimspec.Target{Hash: o.Hash, Art: o.Artifact})
		if err != nil || sharesHandler(p, taken) {
			continue
		}
		taken = append(taken, p)
		out = append(out, Partner{Offer: o, Plan: p, Reason: installReason(o.Installed[v.Node.Name], o.Drifted[v.Node.Name])})
	}
	return out
}

func sharesHandler(p *plan.NodePlan, others []*plan.NodePlan) bool {
	for _, other := range others {
		for _, h := range p.Handlers {
			if slices.ContainsFunc(other.Handlers, func(x plan.Handler) bool { return x.Name == h.Name }) {
				return true
			}
		}
	}
	return false
}

// planJob is a Start of op on the node, alone, with the node's plan for
// op, once the gate view admits it (false: it waits).
func planJob(obs *Snapshot, v *NodeView, op, reason string, gate *nodegate.View, r Rules) (Start, bool, error) {
	p := v.Plan
	if p == nil || p.Operation != plan.Operation(op) {
		var err error
		if p, err = shimspec.Build(obs.Shim, v.Node, plan.Operation(op), r.Settings, obs.Target()); err != nil {
			return Start{}, false, err
		}
	}
	st := Start{View: v, Op: op, Plan: p, Reason: reason, Action: OpAction(op), Hash: obs.JobHash(v, op), ImageWay: nodeview.ImageWay(r.ServerVersion, v.Node),
		Unlabel: op == jobview.OpUninstall && v.Label != "" && v.Label != LabelUninstalling}
	st.Reserve = nodegate.Reservation{Node: v.Node.Name, Shim: jobview.LabelValue(obs.Shim.Name), Job: jobview.JobName(obs.Shim.Name, v.Node.Name, op, obs.JobHash(v, op)), Verify: op == jobview.OpVerify}
	return st, gate.Admit(st.Reserve), nil
}

// planRemovals reserves the nodes the removal starts uninstalling.
func planRemovals(obs *Snapshot, d *Decision, gate *nodegate.View, r Rules) (out []Start, waiting bool, _ error) {
	for _, name := range d.Removal.Start {
		st, ok, err := planJob(obs, d.ByName[name], jobview.OpUninstall, "Uninstalling", gate, r)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			waiting = true
			continue
		}
		out = append(out, st)
	}
	return out, waiting, nil
}
