package containerdconfig

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrInvalidProxyPlugin: the ProxyPlugin fails validation.
var ErrInvalidProxyPlugin = errors.New("invalid proxy plugin")

// ProxyPlugin is a plugin containerd reaches over gRPC on a unix socket,
// registered as a top-level [proxy_plugins.<name>] table (the same in every
// schema version). Sandboxer shims (Kuasar, runwasi) run a sandbox
// controller daemon registered with Type "sandbox"; a RuntimeHandler then
// names it in Sandboxer.
type ProxyPlugin struct {
	// Name is the plugin id; a handler's Sandboxer refers to it. It must be
	// an RFC 1123 DNS label.
	Name string
	// Type is the kind of service behind the socket: "sandbox" (containerd
	// 2.0 and later), "snapshot", "content" or "diff", or the full plugin
	// type (io.containerd.sandbox.controller.v1, ...).
	Type string
	// Address is the absolute path of the daemon's unix socket.
	Address string
	// Platform, when set, is the platform the plugin serves (linux/amd64);
	// containerd assumes its own when empty.
	Platform string
	// Exports are extra values containerd publishes for the plugin (ctr
	// plugins ls -d). containerd sets "address" itself.
	Exports map[string]string
	// Capabilities are published for the plugin as given.
	Capabilities []string
}

// proxyTypes are the proxy plugin types containerd knows, short and full.
// containerd 1.6 and 1.7 know all but sandbox.
var proxyTypes = []string{
	"sandbox", "io.containerd.sandbox.controller.v1",
	"snapshot", "io.containerd.snapshotter.v1",
	"content", "io.containerd.content.v1",
	"diff", "io.containerd.differ.v1",
}

// maxSocketPath is the longest unix socket path (sun_path less its NUL).
const maxSocketPath = 107

var platformRE = regexp.MustCompile(`^[A-Za-z0-9_.()-]+(/[A-Za-z0-9_.-]+){0,2}$`)

// Validate checks the proxy plugin and names the offending field.
func (p ProxyPlugin) Validate() error {
	if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
		return fmt.Errorf("%w: name %q: %s", ErrInvalidProxyPlugin, p.Name, strings.Join(errs, "; "))
	}
	if !slices.Contains(proxyTypes, p.Type) {
		return fmt.Errorf("%w: proxy plugin %s: type %q is not one containerd knows (sandbox, snapshot, content, diff)", ErrInvalidProxyPlugin, p.Name, p.Type)
	}
	if !path.IsAbs(p.Address) || path.Clean(p.Address) != p.Address {
		return fmt.Errorf("%w: proxy plugin %s: address %q must be the clean absolute path of a unix socket", ErrInvalidProxyPlugin, p.Name, p.Address)
	}
	if len(p.Address) > maxSocketPath {
		return fmt.Errorf("%w: proxy plugin %s: address %q is longer than a unix socket path can be (%d bytes)", ErrInvalidProxyPlugin, p.Name, p.Address, maxSocketPath)
	}
	if p.Platform != "" && !platformRE.MatchString(p.Platform) {
		return fmt.Errorf("%w: proxy plugin %s: platform %q is not os[/arch[/variant]]", ErrInvalidProxyPlugin, p.Name, p.Platform)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Exports)) {
		if k == "" || k == "address" {
			return fmt.Errorf("%w: proxy plugin %s: exports key %q is empty or set by containerd", ErrInvalidProxyPlugin, p.Name, k)
		}
	}
	for _, c := range p.Capabilities {
		if c == "" || strings.ContainsAny(c, " \t\r\n") {
			return fmt.Errorf("%w: proxy plugin %s: capability %q is empty or contains whitespace", ErrInvalidProxyPlugin, p.Name, c)
		}
	}
	return nil
}

// The managed block of a proxy plugin, and its drop-in.
const idProxy = "proxy plugin "

func proxyID(name string) string { return idProxy + strconv.Quote(name) }

func proxyKey(name string) []string { return []string{"proxy_plugins", name} }

// proxyDropInName cannot be a handler's drop-in: a DNS label has no dot.
func proxyDropInName(name string) string { return "shimkit-proxy." + name + ".toml" }

func proxySubject(name string) subject {
	return subject{dropIn: proxyDropInName(name), seed: func(v int) []byte {
		return []byte("# Proxy plugin " + strconv.Quote(name) + " for containerd, written by shimkit.\nversion = " + strconv.Itoa(v) + "\n")
	}}
}

// ProxyPlugin returns the decoded [proxy_plugins.<name>] table, or nil.
func (c *Config) ProxyPlugin(name string) map[string]any {
	m, _ := lookup(c.tree, proxyKey(name)).(map[string]any)
	return m
}

// render writes the plugin's tables in the file's style.
func (p ProxyPlugin) render(s style) ([]byte, error) {
	kvs := []keyValue{{"type", p.Type}, {"address", p.Address}}
	if p.Platform != "" {
		kvs = append(kvs, keyValue{"platform", p.Platform})
	}
	if len(p.Capabilities) > 0 {
		kvs = append(kvs, keyValue{"capabilities", p.Capabilities})
	}
	sub := map[string]any{}
	if len(p.Exports) > 0 {
		exports := map[string]any{}
		for k, v := range p.Exports {
			exports[k] = v
		}
		sub["exports"] = exports
	}
	var b bytes.Buffer
	if err := s.renderTable(&b, proxyKey(p.Name), kvs, sub); err != nil {
		return nil, fmt.Errorf("%w: proxy plugin %s: %w", ErrInvalidProxyPlugin, p.Name, err)
	}
	return b.Bytes(), nil
}

// desiredProxy renders the plugin and decodes it, so that it compares with
// what Parse reads.
func desiredProxy(s style, p ProxyPlugin) (body []byte, want map[string]any, err error) {
	body, err = p.render(s)
	if err != nil {
		return nil, nil, err
	}
	tree, err := decode("", body)
	if err != nil {
		return nil, nil, err
	}
	want, _ = lookup(tree, proxyKey(p.Name)).(map[string]any)
	return body, want, nil
}

// AddProxyPlugin returns data with the proxy plugin registered in a
// managed block at the end of the file (a block shimkit wrote before is
// updated in place). changed is false when the file already defines the
// plugin as asked; then out is data itself. A plugin of that name that
// shimkit did not write is never taken over: when it differs, the error
// wraps ErrConflict and names the file, line and key. Everything else stays
// byte for byte, and the result is parsed again and must hold every setting
// of the original with the same value.
func AddProxyPlugin(path string, data []byte, p ProxyPlugin) (out []byte, changed bool, err error) {
	return addProxyPlugin(path, data, p, addOptions{})
}

func addProxyPlugin(path string, data []byte, p ProxyPlugin, opts addOptions) (out []byte, changed bool, err error) {
	cfg, err := parse(path, data, opts.version)
	if err != nil {
		return nil, false, err
	}
	if err := p.Validate(); err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	s := detectStyle(data)
	s.template = opts.template
	body, want, err := desiredProxy(s, p)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	exprs := scan(data)
	blocks, err := findBlocks(path, data, exprs)
	if err != nil {
		return nil, false, err
	}
	key := proxyKey(p.Name)
	b, ours := blockByID(blocks, proxyID(p.Name))
	got := lookup(cfg.tree, key)
	switch {
	case reflect.DeepEqual(got, any(want)):
		return data, false, nil // as asked; when someone else wrote it, it stays theirs
	case got != nil && !ours:
		return nil, false, foreignProxy(path, exprs, p.Name)
	}
	if ours {
		out = slices.Concat(data[:b.bodyStart], body, data[b.bodyEnd:])
	} else {
		out = appendBlock(data, s, proxyID(p.Name), body)
	}
	if err := verifyAdd(path, "proxy plugin", cfg, out, key, want); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// foreignProxy is the error for a proxy plugin shimkit did not write,
// located at its first definition.
func foreignProxy(path string, exprs []expr, name string) error {
	key := proxyKey(name)
	line := 0
	for _, e := range exprs {
		if (e.kind == unstable.Table || e.kind == unstable.KeyValue) && (hasPrefix(e.key, key) || e.kind == unstable.KeyValue && hasPrefix(key, e.key)) {
			line = e.line
			break
		}
	}
	fe := &FileError{Path: path, Line: line, Key: dottedKey(key),
		Err: fmt.Errorf("%w: proxy plugin %s is defined here with other settings and shimkit did not write it; it is not taken over", ErrConflict, name)}
	if line > 0 {
		fe.Column = 1
	}
	return fe
}

// RemoveProxyPlugin returns data without the managed block of the proxy
// plugin: after AddProxyPlugin on a file without it, the original bytes.
// changed is false when the file has no shimkit block for it: a plugin the
// user wrote is never removed.
func RemoveProxyPlugin(path string, data []byte, name string) (out []byte, changed bool, err error) {
	if _, err := decode(path, data); err != nil {
		return nil, false, err
	}
	blocks, err := findBlocks(path, data, scan(data))
	if err != nil {
		return nil, false, err
	}
	b, ok := blockByID(blocks, proxyID(name))
	if !ok {
		return data, false, nil
	}
	out = cutBlock(data, b)
	if _, err := decode(path, out); err != nil {
		return nil, false, fmt.Errorf("removing proxy plugin %s would break the file: %w", name, err)
	}
	return out, true, nil
}
