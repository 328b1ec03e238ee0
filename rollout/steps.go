package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Step is one stage of a staged rollout: Nodes (a count, or a percentage
// of the nodes, rounded up) have the new spec at its end, then they bake
// for Bake before the next step starts.
type Step struct {
	Nodes intstr.IntOrString
	Bake  time.Duration
}

// Count is how many of total nodes the step has updated at its end: at
// least one, at most total.
func (s Step) Count(total int) (int, error) {
	if total == 0 {
		return 0, nil
	}
	if s.Nodes.Type == intstr.String {
		p, ok := strings.CutSuffix(s.Nodes.StrVal, "%")
		v, err := strconv.Atoi(p)
		if !ok || err != nil || v < 1 || v > 100 {
			return 0, fmt.Errorf("nodes %q: want a count or a percentage from 1%% to 100%%", s.Nodes.StrVal)
		}
		// Integer arithmetic: 10% of 30 is 3, not 3.0000000000000004 → 4.
		return max(1, int(math.Ceil(float64(v*total)/100))), nil
	}
	if s.Nodes.IntVal < 1 {
		return 0, fmt.Errorf("nodes %d: want at least 1", s.Nodes.IntVal)
	}
	return min(int(s.Nodes.IntVal), total), nil
}

// Stage is where a staged rollout stands: its current step (len(steps):
// past the last) and, once the step's nodes are updated, when its bake
// ends (a whole second, never before the bake asked for: see Advance).
type Stage struct {
	Step      int
	BakeUntil time.Time
}

// Progress is what the nodes of a rollout have reached: of Total nodes,
// Updated have the new spec and InFlight are changing towards it.
type Progress struct {
	Total, Updated, InFlight int
}

// Staged is a stage's answer.
type Staged struct {
	Stage Stage
	// Allowed is how many more nodes may start now (-1: no bound beyond
	// the strategy's budget).
	Allowed int
	// Baking: the step's nodes are updated and bake until
	// Stage.BakeUntil.
	Baking bool
}

// Steps are a rollout's stages; none means one stage of every node
// without a bake.
type Steps []Step

// Advance moves a stage on at now: a step whose nodes are all updated
// starts its bake (ending at now plus the bake, rounded up to a whole
// second, as the API stores it), and a bake that has ended (and was not held: healthy)
// moves to the next step. It returns the stage and how many nodes may
// start now.
func (ss Steps) Advance(st Stage, p Progress, now time.Time, healthy bool) (Staged, error) {
	for st.Step < len(ss) {
		s := ss[st.Step]
		want, err := s.Count(p.Total)
		if err != nil {
			return Staged{}, fmt.Errorf("steps[%d]: %w", st.Step, err)
		}
		if p.Updated+p.InFlight < want {
			return Staged{Stage: st, Allowed: want - p.Updated - p.InFlight}, nil
		}
		if p.Updated < want {
			return Staged{Stage: st}, nil // the step's last nodes are changing
		}
		if s.Bake > 0 {
			if st.BakeUntil.IsZero() {
				st.BakeUntil = bakeEnd(now, s.Bake)
			}
			if now.Before(st.BakeUntil) || !healthy {
				return Staged{Stage: st, Baking: true}, nil
			}
		}
		st = Stage{Step: st.Step + 1}
	}
	return Staged{Stage: st, Allowed: -1}, nil
}

// bakeEnd is when a bake of d started at now ends, rounded up to a whole
// second: the API stores times to the second (metav1.Time), and a bake
// stored rounded down would end up to a second early.
func bakeEnd(now time.Time, d time.Duration) time.Time {
	end := now.Add(d)
	if t := end.Truncate(time.Second); t.Before(end) {
		return t.Add(time.Second)
	}
	return end
}

// Done: every step is behind the stage.
func (ss Steps) Done(st Stage) bool { return st.Step >= len(ss) }

// Limit keeps the first n nodes to start (n < 0: every one).
func (p *Plan) Limit(n int) {
	if n >= 0 && len(p.Start) > n {
		p.Start = p.Start[:n]
	}
}
