package plan

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Kinds of the documents that carry several Shims' plans for one node, and
// their results: one installer run, one containerd restart.
const (
	KindNodePlanList   = "NodePlanList"
	KindNodeResultList = "NodeResultList"
)

// NodePlanList is several Shims' install plans for one node, carried out
// together (installer.InstallAll): every step for every plan, one
// containerd restart, and a failure of any plan rolls all back.
type NodePlanList struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Items      []NodePlan `json:"items"`
}

// NewList returns a list of the plans, of this package's apiVersion.
func NewList(plans ...*NodePlan) *NodePlanList {
	l := &NodePlanList{APIVersion: APIVersion, Kind: KindNodePlanList}
	for _, p := range plans {
		l.Items = append(l.Items, *p)
	}
	return l
}

// Plans returns pointers to the list's items.
func (l *NodePlanList) Plans() []*NodePlan {
	out := make([]*NodePlan, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// Validate checks the list: install plans of different Shims for the same
// node, each valid. The first invalid field is named with its item
// (items[1].handlers[0].name).
func (l *NodePlanList) Validate() error {
	if l.APIVersion != APIVersion || l.Kind != KindNodePlanList {
		return fmt.Errorf("%w: %s %s: this installer reads %s %s", ErrVersion, l.APIVersion, l.Kind, APIVersion, KindNodePlanList)
	}
	if len(l.Items) == 0 {
		return fmt.Errorf("%w: items: a list needs at least one plan", ErrInvalid)
	}
	var shims []string
	for i := range l.Items {
		p := &l.Items[i]
		if err := p.Validate(); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		if p.Operation != OpInstall {
			return fmt.Errorf("%w: items[%d].operation: %q, a list carries install plans only", ErrInvalid, i, p.Operation)
		}
		if p.Node != l.Items[0].Node {
			return fmt.Errorf("%w: items[%d].node: %q, items[0] is for %q", ErrInvalid, i, p.Node, l.Items[0].Node)
		}
		if slices.Contains(shims, p.Shim.Name) {
			return fmt.Errorf("%w: items[%d].shim.name: Shim %s has two plans", ErrInvalid, i, p.Shim.Name)
		}
		shims = append(shims, p.Shim.Name)
	}
	return nil
}

// EncodeList writes the list as indented JSON after validating it.
func EncodeList(l *NodePlanList) ([]byte, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// DecodePlans reads a NodePlan or a NodePlanList and returns its plans,
// refusing another apiVersion or kind (ErrVersion), unknown fields and
// invalid values (ErrInvalid).
func DecodePlans(data []byte) ([]*NodePlan, error) {
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if head.APIVersion != APIVersion || head.Kind != KindNodePlanList {
		p, err := Decode(data)
		if err != nil {
			return nil, err
		}
		return []*NodePlan{p}, nil
	}
	l := &NodePlanList{}
	if err := decodeStrict(data, l); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for i := range l.Items {
		for j := range l.Items[i].Handlers {
			h := &l.Items[i].Handlers[j]
			h.Options, h.Settings = typed(h.Options), typed(h.Settings)
		}
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l.Plans(), nil
}

// NodeResultList is what the installer reports about a NodePlanList: one
// result per plan, in the list's order.
type NodeResultList struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Items      []NodeResult `json:"items"`
}

// EncodeResults writes the results of a NodePlanList as a NodeResultList
// of at most maxBytes, shortening the longest file list, then the longest
// drift (its first entries kept, and one saying how many more there
// were), then the longest message, until it fits; never an outcome,
// reason or digest.
func EncodeResults(rs []*NodeResult, maxBytes int) ([]byte, error) {
	l := NodeResultList{APIVersion: APIVersion, Kind: KindNodeResultList}
	drifts := map[*NodeResult]*driftCut{}
	for _, r := range rs {
		l.Items = append(l.Items, *r)
	}
	for k := range l.Items {
		drifts[&l.Items[k]] = newDriftCut(l.Items[k].Drift)
	}
	for {
		data, err := json.Marshal(&l)
		if err != nil {
			return nil, err
		}
		if len(data) <= maxBytes {
			return data, nil
		}
		over := len(data) - maxBytes
		files, msg := longest(l.Items, func(r *NodeResult) int { return len(r.Files) }), longest(l.Items, func(r *NodeResult) int { return len(r.Message) })
		drift := longest(l.Items, func(r *NodeResult) int { return drifts[r].keep })
		switch {
		case files != nil:
			files.Files = files.Files[:len(files.Files)/2]
		case drift != nil:
			drift.Drift = drifts[drift].halve()
		case msg != nil:
			msg.Message = shorten(msg.Message, max(len(msg.Message)-over-8, len(msg.Message)/2))
		default:
			return nil, fmt.Errorf("results of %d plans do not fit %d bytes", len(rs), maxBytes)
		}
	}
}

// longest returns the item with the largest positive size, or nil.
func longest(items []NodeResult, size func(*NodeResult) int) *NodeResult {
	var best *NodeResult
	for i := range items {
		if n := size(&items[i]); n > 0 && (best == nil || n > size(best)) {
			best = &items[i]
		}
	}
	return best
}

// DecodeResults reads a NodeResult or a NodeResultList, refusing another
// apiVersion or kind and unknown outcomes.
func DecodeResults(data []byte) ([]*NodeResult, error) {
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: result: %w", ErrInvalid, err)
	}
	if head.APIVersion != APIVersion || head.Kind != KindNodeResultList {
		r, err := DecodeResult(data)
		if err != nil {
			return nil, err
		}
		return []*NodeResult{r}, nil
	}
	var l NodeResultList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: result: %w", ErrInvalid, err)
	}
	out := make([]*NodeResult, len(l.Items))
	for i := range l.Items {
		r := &l.Items[i]
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}
