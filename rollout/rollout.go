package rollout

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// State is where a node stands with a shim.
type State int

// Node states.
const (
	Absent       State = iota // the shim is not on the node
	Installing                // an install or upgrade is running
	Installed                 // installed at Node.SpecHash
	Failed                    // the last operation failed, at Node.SpecHash
	Uninstalling              // an uninstall is running
)

func (s State) String() string {
	switch s {
	case Absent:
		return "absent"
	case Installing:
		return "installing"
	case Installed:
		return "installed"
	case Failed:
		return "failed"
	case Uninstalling:
		return "uninstalling"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Node is one matching node and its state.
type Node struct {
	Name     string
	UID      string
	State    State
	SpecHash string // for Installing, Installed and Failed
	// Priority orders the nodes to start: higher first (the operator
	// prefers nodes where other Shims' installs can share the Job), then
	// the spread order.
	Priority int
	// Held: the node is not to start now, though it is not at the goal
	// (a removal waits for the pods that run with the shim there). It
	// counts as remaining, not as changing: other nodes go on.
	Held bool
	// Retried: an admin asked for this node again (a retry of its
	// failure): it starts within the budget even while other failed
	// nodes halt the rollout, which then holds for every other node.
	Retried bool
}

// Strategy is the Shim's rollout strategy.
type Strategy struct {
	// Recreate changes every node at once.
	Recreate bool
	// MaxUpdate is a count or a percentage ("10%"); nil means 1.
	MaxUpdate *intstr.IntOrString
}

// Budget returns how many of total nodes may change at once.
func (s Strategy) Budget(total int) (int, error) {
	if total == 0 {
		return 0, nil
	}
	if s.Recreate {
		return total, nil
	}
	if s.MaxUpdate == nil {
		return 1, nil
	}
	if s.MaxUpdate.Type == intstr.String {
		p, ok := strings.CutSuffix(s.MaxUpdate.StrVal, "%")
		v, err := strconv.Atoi(p)
		if !ok || err != nil || v < 1 || v > 100 {
			return 0, fmt.Errorf("maxUpdate %q: want a count or a percentage from 1%% to 100%%", s.MaxUpdate.StrVal)
		}
		return max(1, int(math.Ceil(float64(v)*float64(total)/100))), nil
	}
	if s.MaxUpdate.IntVal < 1 {
		return 0, fmt.Errorf("maxUpdate %d: want at least 1", s.MaxUpdate.IntVal)
	}
	return min(int(s.MaxUpdate.IntVal), total), nil
}

// Planner plans the rollout of one Shim.
type Planner struct {
	Strategy Strategy
	// ShimUID and SpecHash spread the order of nodes; SpecHash is also the
	// version every node converges to.
	ShimUID  string
	SpecHash string
}

// Plan is the planner's answer.
type Plan struct {
	// Start lists the nodes to start now, in order.
	Start []string
	// Budget is how many nodes may change at once; InFlight how many are
	// changing.
	Budget   int
	InFlight int
	// Halted says a failed node stops the rollout; Failed names those nodes.
	Halted bool
	Failed []string
	// Held names the nodes not at the goal that are held (Node.Held).
	Held []string
	// Done: every node has reached the goal.
	Done bool
	// Remaining counts the nodes not yet at the goal.
	Remaining int
}

// Install plans towards every node installed at the planner's spec hash.
func (p Planner) Install(nodes []Node) (Plan, error) {
	return p.plan(nodes,
		func(n Node) bool { return n.State == Installed && n.SpecHash == p.SpecHash },
		func(n Node) bool { return n.State == Failed && n.SpecHash == p.SpecHash })
}

// Remove plans towards no node having the shim.
func (p Planner) Remove(nodes []Node) (Plan, error) {
	return p.plan(nodes,
		func(n Node) bool { return n.State == Absent },
		func(n Node) bool { return n.State == Failed })
}

func (p Planner) plan(nodes []Node, done, halts func(Node) bool) (Plan, error) {
	budget, err := p.Strategy.Budget(len(nodes))
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Budget: budget}
	var candidates []Node
	for _, n := range nodes {
		switch {
		case n.State == Installing || n.State == Uninstalling:
			plan.InFlight++
			plan.Remaining++
		case done(n):
		case halts(n):
			plan.Failed = append(plan.Failed, n.Name)
			plan.Remaining++
		case n.Held:
			plan.Held = append(plan.Held, n.Name)
			plan.Remaining++
		default:
			candidates = append(candidates, n)
			plan.Remaining++
		}
	}
	slices.Sort(plan.Failed)
	slices.Sort(plan.Held)
	plan.Halted = len(plan.Failed) > 0
	plan.Done = plan.Remaining == 0
	if plan.Halted {
		candidates = slices.DeleteFunc(candidates, func(n Node) bool { return !n.Retried })
	}
	free := budget - plan.InFlight
	if free <= 0 || len(candidates) == 0 {
		return plan, nil
	}
	type keyed struct {
		priority int
		key      uint64
		name     string
	}
	order := make([]keyed, len(candidates))
	for i, n := range candidates {
		order[i] = keyed{n.Priority, p.orderKey(n), n.Name}
	}
	slices.SortFunc(order, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(b.priority, a.priority), cmp.Compare(a.key, b.key), cmp.Compare(a.name, b.name))
	})
	for _, k := range order[:min(free, len(order))] {
		plan.Start = append(plan.Start, k.name)
	}
	return plan, nil
}

// orderKey spreads nodes deterministically.
func (p Planner) orderKey(n Node) uint64 {
	id := n.UID
	if id == "" {
		id = n.Name
	}
	sum := sha256.Sum256([]byte(id + "\x00" + p.ShimUID + "\x00" + p.SpecHash))
	return binary.BigEndian.Uint64(sum[:8])
}
