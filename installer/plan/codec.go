package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Decode reads a NodePlan, refusing another apiVersion or kind (ErrVersion),
// unknown fields and invalid values (ErrInvalid).
func Decode(data []byte) (*NodePlan, error) {
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if head.APIVersion != APIVersion || head.Kind != KindNodePlan {
		return nil, fmt.Errorf("%w: %q %q: this installer reads apiVersion %s, kind %s", ErrVersion, head.APIVersion, head.Kind, APIVersion, KindNodePlan)
	}
	p := &NodePlan{}
	if err := decodeStrict(data, p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for i := range p.Handlers {
		p.Handlers[i].Options = typed(p.Handlers[i].Options)
		p.Handlers[i].Settings = typed(p.Handlers[i].Settings)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Encode writes the plan as indented JSON after validating it.
func Encode(p *NodePlan) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the document")
	}
	return nil
}

// typed turns json.Number into int64 (whole numbers) or float64, so that
// options render with their TOML types.
func typed(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = typedValue(v)
	}
	return out
}

func typedValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return v.String()
		}
		return f
	case map[string]any:
		return typed(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = typedValue(e)
		}
		return out
	}
	return v
}
