package argocd

import (
	"errors"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Health statuses of Argo CD.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// ErrScript: the script failed or returned no health.
var ErrScript = errors.New("health script")

// Health is what a health script returns.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Check runs the health script on obj (the resource as JSON decodes it:
// maps, slices, strings, float64s, bools), with the Lua libraries Argo CD
// opens for health scripts (base, table, string, math).
func Check(script string, obj map[string]any) (Health, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		return Health{}, fmt.Errorf("%w: %w", ErrScript, err)
	}
	t, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("%w: returned %s, not a table", ErrScript, L.Get(-1).Type())
	}
	h := Health{Status: lua.LVAsString(t.RawGetString("status")), Message: lua.LVAsString(t.RawGetString("message"))}
	switch h.Status {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
		return h, nil
	}
	return Health{}, fmt.Errorf("%w: status %q is not one of Argo CD's", ErrScript, h.Status)
}

// toLua converts a JSON value into Lua's: objects and arrays to tables
// (arrays from 1), numbers, strings, booleans, null to nil.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}
