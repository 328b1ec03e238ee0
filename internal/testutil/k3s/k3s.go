// Package k3s reproduces what the agent of k3s (and of RKE2, which runs
// k3s's agent code) does to containerd's configuration on every start,
// checked against k3s's source (github.com/k3s-io/k3s):
//
//   - pkg/agent/containerd/runtimes.go: it looks for known runtimes with
//     exec.LookPath on its PATH, with runtimesPath
//     ("/usr/local/nvidia/toolkit:/opt/kwasm/bin",
//     pkg/agent/containerd/config_linux.go) put in front, and adds every one
//     it finds to ExtraRuntimes under a fixed name (crun, nvidia, spin,
//     wasmtime, ...), BinaryName being the path found;
//   - pkg/agent/containerd/config.go and pkg/agent/templates: it renders
//     config.toml from config-v3.toml.tmpl (containerd 2; with the v3 base)
//     or config.toml.tmpl (with the v2 base) when one exists, else from the
//     base itself, with Go's text/template: the user's template is parsed
//     as "compiled_template", the base added to it as the template "base",
//     and the result executed with a ContainerdConfig as its data;
//   - the base (templates.go, ContainerdConfigTemplateV3 and
//     ContainerdConfigTemplate) always defines the runc runtime, then one
//     table per ExtraRuntimes entry ('<name>' and '<name>'.options with
//     BinaryName and SystemdCgroup); since k3s PR #13680 the v3 base
//     imports config-v3.toml.d/*.toml (Base with Imports), before it it
//     imports nothing.
//
// What it does not reproduce: the rest of ContainerdConfig (registries,
// mirrors, SELinux, user namespaces, stargz, the default runtime flag) and
// of the base (stream server, snapshotter choice, CDI, the data
// directory's own bin directory on PATH); a user template using those
// fields fails to execute here where k3s would render it. The stand-in's
// base keeps what the sandbox needs (restrict_oom_score_adj, the pause
// image, NRI off, Debian's CNI) and containerd's root at
// /var/lib/containerd. The v2 base never imports a drop-in directory.
package k3s

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

// RuntimesPath is what k3s puts in front of its PATH while it looks for
// runtimes (config_linux.go).
const RuntimesPath = "/usr/local/nvidia/toolkit:/opt/kwasm/bin"

// Runtime is one entry of ExtraRuntimes (templates.ContainerdRuntimeConfig).
type Runtime struct {
	RuntimeType string
	BinaryName  string
}

// knownRuntimes are the runtimes k3s looks for, by name (runtimes.go).
var knownRuntimes = map[string]Runtime{
	"crun":                {"io.containerd.runc.v2", "crun"},
	"nvidia":              {"io.containerd.runc.v2", "nvidia-container-runtime"},
	"nvidia-experimental": {"io.containerd.runc.v2", "nvidia-container-runtime-experimental"},
	"nvidia-cdi":          {"io.containerd.runc.v2", "nvidia-container-runtime.cdi"},
	"lunatic":             {"io.containerd.lunatic.v1", "containerd-shim-lunatic-v1"},
	"slight":              {"io.containerd.slight.v1", "containerd-shim-slight-v1"},
	"spin":                {"io.containerd.spin.v2", "containerd-shim-spin-v2"},
	"wws":                 {"io.containerd.wws.v1", "containerd-shim-wws-v1"},
	"wasmedge":            {"io.containerd.wasmedge.v1", "containerd-shim-wasmedge-v1"},
	"wasmer":              {"io.containerd.wasmer.v1", "containerd-shim-wasmer-v1"},
	"wasmtime":            {"io.containerd.wasmtime.v1", "containerd-shim-wasmtime-v1"},
}

// KnownBinaries lists the binary names k3s looks for, sorted.
func KnownBinaries() []string {
	var out []string
	for _, r := range knownRuntimes {
		out = append(out, r.BinaryName)
	}
	sort.Strings(out)
	return out
}

// FindRuntimes looks for the known runtimes as k3s does, on RuntimesPath
// then pathEnv, in the root filesystem at root: the first directory with
// an executable regular file of the name wins (exec.LookPath).
func FindRuntimes(root, pathEnv string) map[string]Runtime {
	found := map[string]Runtime{}
	dirs := filepath.SplitList(RuntimesPath + string(filepath.ListSeparator) + pathEnv)
	for name, r := range knownRuntimes {
		for _, dir := range dirs {
			if !path.IsAbs(dir) {
				continue
			}
			p := path.Join(dir, r.BinaryName)
			if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found[name] = Runtime{RuntimeType: r.RuntimeType, BinaryName: p}
				break
			}
		}
	}
	return found
}

// Containerd are the paths of the agent's containerd (config.Containerd).
type Containerd struct {
	Address, Root, State, Opt, Config, Template string
}

// AgentConfig is the part of config.Agent the bases use.
type AgentConfig struct {
	PauseImage, CNIBinDir, CNIConfDir, Snapshotter string
}

// NodeConfig is the part of config.Node the bases use.
type NodeConfig struct {
	Containerd  Containerd
	AgentConfig AgentConfig
}

// Data is the template's dot (templates.ContainerdConfig), in part.
type Data struct {
	NodeConfig            NodeConfig
	SystemdCgroup         bool
	ExtraRuntimes         map[string]Runtime
	Program               string
	IsRunningInUserNS     bool
	EnableUnprivileged    bool
	DisableCgroup         bool
	PrivateRegistryConfig any
}

// Render renders the user's template (nil: none, the base alone) as k3s
// does: parsed as "compiled_template" with base added as "base", then
// executed with data.
func Render(user []byte, base string, data Data) ([]byte, error) {
	text := string(user)
	if user == nil {
		text = base
	}
	t, err := template.New("compiled_template").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if _, err := t.New("base").Parse(base); err != nil {
		return nil, fmt.Errorf("parse base template: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("execute template: %w", err)
	}
	return out.Bytes(), nil
}

// Generation is a k3s (or RKE2) release line, as far as containerd's
// config goes.
type Generation struct {
	// Schema is the base's config version: 3 for containerd 2
	// (config-v3.toml.tmpl), 2 for containerd 1.7 (config.toml.tmpl).
	Schema int
	// Imports: the v3 base imports config-v3.toml.d/*.toml (k3s PR #13680).
	Imports bool
}

// TemplateFile is a template a generation reads and the schema of the
// base it is rendered with.
type TemplateFile struct {
	Name   string
	Schema int
}

// Templates are the template files a generation reads, in order:
// containerd 2 generations config-v3.toml.tmpl then config.toml.tmpl,
// containerd 1.7 ones config.toml.tmpl only.
func (g Generation) Templates() []TemplateFile {
	if g.Schema < 3 {
		return []TemplateFile{{"config.toml.tmpl", 2}}
	}
	return []TemplateFile{{"config-v3.toml.tmpl", 3}, {"config.toml.tmpl", 2}}
}

// Base returns the generation's base template of the schema.
func (g Generation) Base(schema int) string {
	if schema >= 3 {
		imports := ""
		if g.Imports {
			imports = "imports = [\"{{ .NodeConfig.Containerd.Template }}/config-v3.toml.d/*.toml\"]\n"
		}
		return strings.Replace(baseV3, "@IMPORTS@\n", imports, 1)
	}
	return baseV2
}

const baseV3 = `# File generated by {{ .Program }}. DO NOT EDIT. Use config-v3.toml.tmpl instead.
version = 3
@IMPORTS@
root = "{{ .NodeConfig.Containerd.Root }}"
state = "{{ .NodeConfig.Containerd.State }}"

[grpc]
  address = "{{ .NodeConfig.Containerd.Address }}"

[plugins.'io.containerd.internal.v1.opt']
  path = "{{ .NodeConfig.Containerd.Opt }}"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "10010"

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  restrict_oom_score_adj = true

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{{ .NodeConfig.AgentConfig.PauseImage }}"

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["{{ .NodeConfig.AgentConfig.CNIBinDir }}"]
  conf_dir = "{{ .NodeConfig.AgentConfig.CNIConfDir }}"

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = {{ .SystemdCgroup }}

{{ range $k, $v := .ExtraRuntimes }}
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{{ $k }}']
  runtime_type = "{{$v.RuntimeType}}"
{{ with $v.BinaryName}}
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{{ $k }}'.options]
  BinaryName = {{ printf "%q" . }}
  SystemdCgroup = {{ $.SystemdCgroup }}
{{ end }}
{{ end }}
`

const baseV2 = `# File generated by {{ .Program }}. DO NOT EDIT. Use config.toml.tmpl instead.
version = 2
root = "{{ .NodeConfig.Containerd.Root }}"
state = "{{ .NodeConfig.Containerd.State }}"

[grpc]
  address = "{{ .NodeConfig.Containerd.Address }}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{{ .NodeConfig.Containerd.Opt }}"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "10010"
  enable_selinux = false
  restrict_oom_score_adj = true
  sandbox_image = "{{ .NodeConfig.AgentConfig.PauseImage }}"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "{{ .NodeConfig.AgentConfig.CNIBinDir }}"
  conf_dir = "{{ .NodeConfig.AgentConfig.CNIConfDir }}"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = {{ .SystemdCgroup }}

{{range $k, $v := .ExtraRuntimes}}
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{$k}}"]
  runtime_type = "{{$v.RuntimeType}}"
{{with $v.BinaryName}}
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{$k}}".options]
  BinaryName = {{printf "%q" .}}
  SystemdCgroup = {{ $.SystemdCgroup }}
{{end}}
{{end}}
`

// Agent describes one agent: its program name (k3s or rke2), data
// directory, generation and containerd socket.
type Agent struct {
	Program    string
	DataDir    string // /var/lib/rancher/k3s or /var/lib/rancher/rke2
	Generation Generation
	// Root and PauseImage, CNIBinDir, CNIConfDir fill the node config.
	Root, PauseImage, CNIBinDir, CNIConfDir string
}

// ConfigDir is where the agent keeps containerd's config and templates.
func (a Agent) ConfigDir() string { return a.DataDir + "/agent/etc/containerd" }

// Socket is containerd's socket (k3s and RKE2 both use /run/k3s).
const Socket = "/run/k3s/containerd/containerd.sock"

// Data is the template data the agent renders with, ExtraRuntimes found
// under root on pathEnv.
func (a Agent) Data(root, pathEnv string) Data {
	return Data{
		NodeConfig: NodeConfig{
			Containerd: Containerd{
				Address: Socket, Root: a.Root, State: "/run/k3s/containerd",
				Opt: a.DataDir + "/agent/containerd", Config: a.ConfigDir() + "/config.toml", Template: a.ConfigDir(),
			},
			AgentConfig: AgentConfig{PauseImage: a.PauseImage, CNIBinDir: a.CNIBinDir, CNIConfDir: a.CNIConfDir, Snapshotter: "overlayfs"},
		},
		ExtraRuntimes: FindRuntimes(root, pathEnv), Program: a.Program, EnableUnprivileged: true,
	}
}

// RenderConfig renders config.toml as the agent does on start, reading its
// templates under root: the first template file of the generation that
// exists, with its base, else the default base.
func (a Agent) RenderConfig(root, pathEnv string) ([]byte, error) {
	data := a.Data(root, pathEnv)
	for _, t := range a.Generation.Templates() {
		p := a.ConfigDir() + "/" + t.Name
		user, err := os.ReadFile(filepath.Join(root, p))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out, err := Render(user, a.Generation.Base(t.Schema), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return out, nil
	}
	return Render(nil, a.Generation.Base(a.Generation.Schema), data)
}
