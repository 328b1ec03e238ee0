// Package cli is the shimkit-installer command: install, uninstall and
// status of a shim on the node it runs on. Its flags have environment
// variable twins (SHIMKIT_*), the way the operator's per-node Job passes
// them.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer"
)

// Exit codes: what a Job's status (and a script) can tell apart.
const (
	ExitOK             = 0 // installed, uninstalled, or nothing to do
	ExitFailed         = 1 // failed before the node was changed
	ExitUsage          = 2 // bad flags
	ExitRolledBack     = 3 // failed; the node was restored
	ExitRollbackFailed = 4 // failed, and restoring the node failed too
)

const usage = `usage: shimkit-installer install|uninstall|status [flags]

Installs a containerd shim on this node: fetches and verifies it, places the
binary, registers the runtime handler, restarts containerd through systemd and
checks it over CRI; rolls everything back if containerd does not come back.
Every flag can also be given as the environment variable in brackets.
`

// Run runs the command and returns its exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	cmd := args[0]
	fs := flag.NewFlagSet("shimkit-installer "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	f := newFlags(fs, getenv)
	if err := fs.Parse(args[1:]); err != nil {
		return ExitUsage
	}
	inst, err := f.installer(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "shimkit-installer:", err)
		return ExitUsage
	}
	switch cmd {
	case "install":
		spec, err := f.spec()
		if err != nil {
			fmt.Fprintln(stderr, "shimkit-installer:", err)
			return ExitUsage
		}
		res, err := inst.Install(ctx, spec)
		return report(stdout, stderr, "install", res, err)
	case "uninstall":
		if f.name == "" {
			fmt.Fprintln(stderr, "shimkit-installer: --name is required")
			return ExitUsage
		}
		res, err := inst.Uninstall(ctx, f.name)
		return report(stdout, stderr, "uninstall", res, err)
	case "status":
		st, err := inst.Status(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "shimkit-installer:", err)
			return ExitFailed
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
		return ExitOK
	}
	fmt.Fprintf(stderr, "shimkit-installer: unknown command %q\n%s", cmd, usage)
	return ExitUsage
}

func report(stdout, stderr io.Writer, op string, res *installer.Result, err error) int {
	switch {
	case errors.Is(err, installer.ErrRollbackFailed):
		fmt.Fprintf(stderr, "shimkit-installer: %s %v\n", op, err)
		return ExitRollbackFailed
	case errors.Is(err, installer.ErrRolledBack):
		fmt.Fprintf(stderr, "shimkit-installer: %s %v\n", op, err)
		return ExitRolledBack
	case err != nil:
		fmt.Fprintf(stderr, "shimkit-installer: %s failed, node unchanged: %v\n", op, err)
		return ExitFailed
	}
	what := "nothing to do"
	switch {
	case res.Restarted:
		what = "done; containerd restarted in " + res.RestartDuration.Round(time.Millisecond).String()
	case res.Changed:
		what = "done; no restart needed"
	case res.Upgrade:
		what = "binary upgraded; config unchanged, no restart needed"
	}
	fmt.Fprintf(stdout, "%s %s: %s (%s)\n", op, res.Shim, what, res.Duration.Round(time.Millisecond))
	return ExitOK
}

// flags holds the parsed command line.
type flags struct {
	hostRoot, binDir, linkDir, stateDir, preset, mode string
	name, handler, runtimeType, runtimePath           string
	fetchType, location, sha256, reference, secret    string
	plainHTTP, offline, privNoDevices                 bool
	options                                           containerdconfig.OptionsFlag
	podAnnotations                                    listFlag
	timeout                                           time.Duration
	logFormat                                         string
	getenv                                            func(string) string
}

func newFlags(fs *flag.FlagSet, getenv func(string) string) *flags {
	f := &flags{getenv: getenv, options: containerdconfig.OptionsFlag{}}
	str := func(p *string, name, env, def, help string) {
		if v := getenv(env); v != "" {
			def = v
		}
		fs.StringVar(p, name, def, help+" ["+env+"]")
	}
	boolean := func(p *bool, name, env, help string) {
		fs.BoolVar(p, name, getenv(env) == "true" || getenv(env) == "1", help+" ["+env+"]")
	}
	str(&f.hostRoot, "host-root", "SHIMKIT_HOST_ROOT", "/", "where the node's / is mounted")
	str(&f.binDir, "bin-dir", "SHIMKIT_BIN_DIR", "/opt/shimkit/bin", "node directory for shim binaries")
	str(&f.linkDir, "link-dir", "SHIMKIT_LINK_DIR", "/usr/local/bin", `node directory on containerd's PATH for links to the shims ("-": none)`)
	str(&f.stateDir, "state-dir", "SHIMKIT_STATE_DIR", "/var/lib/shimkit", "node directory for state and lock")
	str(&f.preset, "preset", "SHIMKIT_PRESET", "", "distribution: containerd, k3s, rke2, microk8s, k0s (default: detected)")
	str(&f.mode, "config-mode", "SHIMKIT_CONFIG_MODE", "auto", "auto, file or drop-in")
	str(&f.name, "name", "SHIMKIT_SHIM_NAME", "", "shim name (required)")
	str(&f.handler, "handler", "SHIMKIT_HANDLER", "", "runtime handler name (default: the shim name)")
	str(&f.runtimeType, "runtime-type", "SHIMKIT_RUNTIME_TYPE", "", "io.containerd.<shim>.<version> (default io.containerd.<name>.v2)")
	str(&f.runtimePath, "runtime-path", "SHIMKIT_RUNTIME_PATH", "", "absolute shim path (default: the placed binary)")
	str(&f.fetchType, "fetch-type", "SHIMKIT_FETCH_TYPE", "anonHttp", "anonHttp, oci or local")
	str(&f.location, "location", "SHIMKIT_LOCATION", "", "URL (anonHttp) or path (local) of the artifact")
	str(&f.sha256, "sha256", "SHIMKIT_SHA256", "", "expected sha256 of the artifact (recommended)")
	str(&f.reference, "oci-reference", "SHIMKIT_OCI_REFERENCE", "", "registry/repository:tag or @sha256:digest")
	str(&f.secret, "pull-secret", "SHIMKIT_PULL_SECRET", "", "path of a .dockerconfigjson for the registry")
	str(&f.logFormat, "log-format", "SHIMKIT_LOG_FORMAT", "auto", "auto (text on a terminal, JSON otherwise), text or json")
	boolean(&f.plainHTTP, "plain-http", "SHIMKIT_PLAIN_HTTP", "talk plain HTTP to the registry")
	boolean(&f.offline, "offline", "SHIMKIT_OFFLINE", "install into a root filesystem: no restart, no health check")
	boolean(&f.privNoDevices, "privileged-without-host-devices", "SHIMKIT_PRIVILEGED_WITHOUT_HOST_DEVICES", "keep host devices out of privileged containers")
	fs.Var(f.options, "option", "handler option key=value, value read as TOML (repeatable) [SHIMKIT_OPTIONS as a JSON object]")
	fs.Var(&f.podAnnotations, "pod-annotation", "pod annotation passed to the shim (repeatable) [SHIMKIT_POD_ANNOTATIONS, comma-separated]")
	timeout := 30 * time.Second
	if v, err := time.ParseDuration(getenv("SHIMKIT_HEALTH_TIMEOUT")); err == nil {
		timeout = v
	}
	fs.DurationVar(&f.timeout, "health-timeout", timeout, "how long containerd may take to come back [SHIMKIT_HEALTH_TIMEOUT]")
	return f
}

func (f *flags) installer(stdout io.Writer) (*installer.Installer, error) {
	inst := &installer.Installer{
		HostRoot: f.hostRoot, BinDir: f.binDir, LinkDir: f.linkDir, StateDir: f.stateDir, Offline: f.offline,
	}
	switch f.mode {
	case "auto", "":
	case "file":
		inst.Mode = containerdconfig.ModeFile
	case "drop-in":
		inst.Mode = containerdconfig.ModeDropIn
	default:
		return nil, fmt.Errorf("--config-mode %q: want auto, file or drop-in", f.mode)
	}
	if f.preset != "" {
		p, err := containerdconfig.PresetNamed(f.preset)
		if err != nil {
			return nil, err
		}
		inst.Preset = &p
	}
	if !f.offline {
		t := containerdconfig.Target{Root: f.hostRoot}
		if inst.Preset != nil {
			t.Preset = *inst.Preset
		} else if p, err := containerdconfig.Detect(f.hostRoot); err == nil {
			t.Preset = p
		}
		inst.Health = &installer.CRIHealth{Socket: t.LocalPath(t.Preset.Socket), Timeout: f.timeout}
	}
	text := f.logFormat == "text" || f.logFormat == "auto" && isTerminal(stdout)
	if text {
		inst.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		inst.AfterStep = func(step string) { fmt.Fprintf(stdout, "  ✓ %s\n", step) }
	} else {
		inst.Log = slog.New(slog.NewJSONHandler(stdout, nil))
	}
	return inst, nil
}

func (f *flags) spec() (installer.Spec, error) {
	if f.name == "" {
		return installer.Spec{}, errors.New("--name is required")
	}
	h := containerdconfig.RuntimeHandler{
		Name: f.handler, RuntimeType: f.runtimeType, RuntimePath: f.runtimePath,
		PodAnnotations: f.podAnnotations, PrivilegedWithoutHostDevices: f.privNoDevices,
	}
	if h.Name == "" {
		h.Name = f.name
	}
	if h.RuntimeType == "" {
		h.RuntimeType = "io.containerd." + f.name + ".v2"
	}
	if v := f.getenv("SHIMKIT_POD_ANNOTATIONS"); v != "" && len(h.PodAnnotations) == 0 {
		h.PodAnnotations = strings.Split(v, ",")
	}
	if v := f.getenv("SHIMKIT_OPTIONS"); v != "" && len(f.options) == 0 {
		if err := json.Unmarshal([]byte(v), (*map[string]any)(&f.options)); err != nil {
			return installer.Spec{}, fmt.Errorf("SHIMKIT_OPTIONS: %w", err)
		}
	}
	if len(f.options) > 0 {
		h.Options = normalizeJSON(f.options)
	}
	spec := installer.Spec{Name: f.name, Handler: h}
	// The node keeps verified artifacts by digest, so it never downloads the
	// same one twice (and needs no /tmp in the installer's image).
	cache, err := fetch.NewCache(filepath.Join(f.hostRoot, f.stateDir, "cache"))
	if err != nil {
		return spec, err
	}
	opts := fetch.Options{Cache: cache}
	switch f.fetchType {
	case "anonHttp", "http":
		if f.location == "" {
			return spec, errors.New("--location is required for anonHttp")
		}
		spec.Fetcher = fetch.NewHTTPFetcher(f.location, f.sha256, opts)
		spec.Source = f.location + "@" + f.sha256
	case "oci":
		if f.reference == "" {
			return spec, errors.New("--oci-reference is required for oci")
		}
		o := &fetch.OCIFetcher{Reference: f.reference, PlainHTTP: f.plainHTTP, Options: opts}
		if f.secret != "" {
			data, err := os.ReadFile(f.secret)
			if err != nil {
				return spec, fmt.Errorf("--pull-secret: %w", err)
			}
			o.DockerConfigJSON = data
		}
		spec.Fetcher, spec.Source = o, f.reference
	case "local":
		spec.Fetcher = &fetch.LocalFetcher{Path: f.location, SHA256: f.sha256, Options: opts}
		spec.Source = f.location + "@" + f.sha256
	default:
		return spec, fmt.Errorf("--fetch-type %q: want anonHttp, oci or local", f.fetchType)
	}
	return spec, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// normalizeJSON turns the float64 of JSON numbers that are whole into
// int64, so that options from SHIMKIT_OPTIONS render as TOML integers.
func normalizeJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case float64:
			if v == float64(int64(v)) {
				out[k] = int64(v)
				continue
			}
			out[k] = v
		case map[string]any:
			out[k] = normalizeJSON(v)
		default:
			out[k] = v
		}
	}
	return out
}
