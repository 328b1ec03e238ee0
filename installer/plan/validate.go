package plan

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Errors of Decode and Validate, checked with errors.Is.
var (
	// ErrVersion: the document is not a NodePlan (or NodeResult) of
	// APIVersion.
	ErrVersion = errors.New("unsupported plan apiVersion or kind")
	// ErrInvalid: the document is malformed or a field is invalid.
	ErrInvalid = errors.New("invalid plan")
)

// Validate checks the plan and names the first invalid field.
func (p *NodePlan) Validate() error {
	if p.APIVersion != APIVersion || p.Kind != KindNodePlan {
		return fmt.Errorf("%w: %s %s: this installer reads %s %s", ErrVersion, p.APIVersion, p.Kind, APIVersion, KindNodePlan)
	}
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (p *NodePlan) validate() error {
	if len(p.Shim.Name) > 253 || !isDNSSubdomain(p.Shim.Name) {
		return fmt.Errorf("shim.name %q: not a DNS subdomain", p.Shim.Name)
	}
	switch p.Runtime {
	case "", RuntimeContainerd, RuntimeCRIO:
	default:
		return fmt.Errorf("runtime %q: want %q, %q or empty (detected on the node)", p.Runtime, RuntimeContainerd, RuntimeCRIO)
	}
	switch p.Operation {
	case OpUninstall:
		return nil // the node's state says what to remove
	case OpInstall, OpVerify:
		// A verify plan is the install plan of the Shim's current spec:
		// the same rules.
		if p.SpecHash == "" {
			return fmt.Errorf("specHash: required for %s", p.Operation)
		}
	default:
		return fmt.Errorf("operation %q: want install, uninstall or verify", p.Operation)
	}
	if err := p.Artifact.validate(); err != nil {
		return err
	}
	if len(p.Files) == 0 {
		return errors.New("files: at least one file")
	}
	if len(p.Handlers) == 0 && len(p.Sandboxers) == 0 {
		return errors.New("handlers: at least one handler")
	}
	if err := validateFiles(p.Files); err != nil {
		return err
	}
	sandboxers := map[string]bool{}
	for i, s := range p.Sandboxers {
		if err := s.validate(); err != nil {
			return fmt.Errorf("sandboxers[%d]: %w", i, err)
		}
		if sandboxers[s.Name] {
			return fmt.Errorf("sandboxers[%d].name %q: given twice", i, s.Name)
		}
		sandboxers[s.Name] = true
	}
	names := map[string]bool{}
	for i, h := range p.Handlers {
		if err := h.validate(); err != nil {
			return fmt.Errorf("handlers[%d]: %w", i, err)
		}
		if names[h.Name] {
			return fmt.Errorf("handlers[%d].name %q: given twice", i, h.Name)
		}
		names[h.Name] = true
	}
	if m := p.Migrate; m != nil {
		if m.From != FromRuntimeClassManager {
			return fmt.Errorf("migrate.from %q: want %s", m.From, FromRuntimeClassManager)
		}
		if !names[m.Handler] {
			return fmt.Errorf("migrate.handler %q: not one of the plan's handlers", m.Handler)
		}
	}
	if c := p.Canary; c != nil {
		if !names[c.Handler] {
			return fmt.Errorf("canary.handler %q: not one of the plan's handlers", c.Handler)
		}
		if strings.TrimSpace(c.Image) == "" {
			return errors.New("canary.image: required")
		}
		if len(c.RuntimeClass) > 253 || !isDNSSubdomain(c.RuntimeClass) {
			return fmt.Errorf("canary.runtimeClass %q: not a DNS subdomain", c.RuntimeClass)
		}
		if len(c.Namespace) > 63 || !isDNSLabel(c.Namespace) {
			return fmt.Errorf("canary.namespace %q: not a DNS label", c.Namespace)
		}
		if c.Timeout <= 0 {
			return errors.New("canary.timeout: must be positive")
		}
	}
	switch p.Restart.ConfigMode {
	case "", "auto", "file", "drop-in":
	default:
		return fmt.Errorf("restart.configMode %q: want auto, file or drop-in", p.Restart.ConfigMode)
	}
	if p.Restart.Timeout < 0 {
		return errors.New("restart.timeout: negative")
	}
	return nil
}

func (a *Artifact) validate() error {
	if a == nil {
		return errors.New("artifact: required for install and verify")
	}
	if a.Digest != "" && !isDigest(a.Digest) {
		return fmt.Errorf("artifact.digest %q: want sha256:<64 hex digits>", a.Digest)
	}
	switch a.Type {
	case SourceHTTP:
		if !strings.HasPrefix(a.URL, "http://") && !strings.HasPrefix(a.URL, "https://") {
			return fmt.Errorf("artifact.url %q: want an http(s) URL", a.URL)
		}
	case SourceOCI:
		if a.Reference == "" {
			return errors.New("artifact.reference: required for oci")
		}
	case SourceFile:
		if !path.IsAbs(a.Path) {
			return fmt.Errorf("artifact.path %q: want an absolute path", a.Path)
		}
	case SourceImage:
		if !path.IsAbs(a.Path) {
			return fmt.Errorf("artifact.path %q: want the absolute path of the image's files", a.Path)
		}
		if a.Digest == "" || !strings.HasSuffix(a.Reference, "@"+a.Digest) {
			return fmt.Errorf("artifact.reference %q: an image artifact is pinned: want image@%s", a.Reference, a.Digest)
		}
		if a.Verification != nil {
			return errors.New("artifact.verification: an image's signature is verified where its digest is pinned, not on the node")
		}
	default:
		return fmt.Errorf("artifact.type %q: want http, oci, file or image", a.Type)
	}
	return a.Verification.validate(a)
}

func (v *Verification) validate(a *Artifact) error {
	if v == nil {
		return nil
	}
	if a.Digest == "" {
		return errors.New("artifact.verification: needs artifact.digest (a signature is verified for a pinned digest)")
	}
	if len(v.PublicKeys) == 0 && v.Keyless == nil {
		return errors.New("artifact.verification: set publicKeys, keyless, or both")
	}
	for i, k := range v.PublicKeys {
		if !strings.Contains(k, "-----BEGIN PUBLIC KEY-----") {
			return fmt.Errorf("artifact.verification.publicKeys[%d]: want a PEM public key", i)
		}
	}
	if k := v.Keyless; k != nil {
		if k.Issuer == "" || (k.Subject == "") == (k.SubjectRegExp == "") {
			return errors.New("artifact.verification.keyless: set issuer and exactly one of subject and subjectRegExp")
		}
		if !path.IsAbs(k.TrustedRootPath) {
			return fmt.Errorf("artifact.verification.keyless.trustedRootPath %q: want an absolute path", k.TrustedRootPath)
		}
	}
	if a.Type == SourceFile {
		return errors.New("artifact.verification: file artifacts carry no signature (verify them where they are built)")
	}
	if a.Type == SourceHTTP && a.SignatureURL == "" {
		return errors.New("artifact.signatureURL: required to verify an http artifact")
	}
	return nil
}

// validateFiles checks each file, and that no two go to the same place:
// the same path, or a path under a directory's.
func validateFiles(files []File) error {
	targets := map[string]bool{}
	for i, f := range files {
		if err := f.validate(); err != nil {
			return fmt.Errorf("files[%d]: %w", i, err)
		}
		if targets[f.Path] {
			return fmt.Errorf("files[%d].path %q: given twice", i, f.Path)
		}
		targets[f.Path] = true
	}
	for i, f := range files {
		for j, d := range files {
			if d.IsDir() && d.Path != f.Path && strings.HasPrefix(f.Path+"/", d.Path) {
				return fmt.Errorf("files[%d].path %q: inside %q, the directory files[%d] lays out", i, f.Path, d.Path, j)
			}
		}
	}
	return nil
}

func (f File) validate() error {
	switch {
	case f.Content != nil:
		if f.Source != "" {
			return fmt.Errorf("source %q: none with content", f.Source)
		}
	case f.IsDir():
		if src := strings.TrimSuffix(f.Source, "/"); !localPath(src) || strings.ContainsAny(src, `*?[\`) {
			return fmt.Errorf("source %q: want a clean relative directory in the artifact, not a pattern", f.Source)
		}
		if !strings.HasSuffix(f.Path, "/") || !localPath(strings.TrimSuffix(f.Path, "/")) {
			return fmt.Errorf("path %q: want a clean relative directory inside the bundle, ending in /", f.Path)
		}
	case f.Source == "" || strings.HasPrefix(f.Source, "/"):
		return fmt.Errorf("source %q: want a relative path or pattern in the artifact", f.Source)
	}
	if _, err := path.Match(f.Source, ""); err != nil {
		return fmt.Errorf("source %q: %w", f.Source, err)
	}
	if !f.IsDir() && !localPath(f.Path) {
		return fmt.Errorf("path %q: want a clean relative path inside the bundle", f.Path)
	}
	if f.Mode&^0o777 != 0 {
		return fmt.Errorf("mode %s: only permission bits (no setuid, setgid or sticky)", FormatMode(f.Mode))
	}
	return nil
}

func localPath(p string) bool {
	return p != "" && p != "." && !path.IsAbs(p) && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

func (h Handler) validate() error {
	if !isDNSLabel(h.Name) || len(h.Name) > 63 {
		return fmt.Errorf("name %q: not a DNS label (RFC 1123)", h.Name)
	}
	if !isRuntimeType(h.RuntimeType) && !absolutePath(h.RuntimeType) {
		return fmt.Errorf("runtimeType %q: want io.containerd.<name>.<version> or an absolute path", h.RuntimeType)
	}
	if h.RuntimePath != "" && !absolutePath(h.RuntimePath) {
		return fmt.Errorf("runtimePath %q: want an absolute path", h.RuntimePath)
	}
	for _, k := range []string{"runtime_type", "runtime_path", "options", "pod_annotations", "container_annotations",
		"privileged_without_host_devices", "snapshotter", "sandboxer", "io_type"} {
		if _, ok := h.Settings[k]; ok {
			return fmt.Errorf("settings.%s: use the handler's own field", k)
		}
	}
	switch h.IOType {
	case "", "fifo", "streaming":
	default:
		return fmt.Errorf("ioType %q: want fifo or streaming", h.IOType)
	}
	return nil
}

func (s Sandboxer) validate() error {
	if !isDNSLabel(s.Name) || len(s.Name) > 63 {
		return fmt.Errorf("name %q: not a DNS label (RFC 1123)", s.Name)
	}
	if !isUnit(s.Unit) || len(s.Unit) > 255 {
		return fmt.Errorf("unit %q: want a systemd unit name ending in .service", s.Unit)
	}
	if len(s.Command) == 0 || !absolutePath(s.Command[0]) {
		return fmt.Errorf("command: want an absolute program path first, got %q", s.Command)
	}
	if !absolutePath(s.Address) || len(s.Address) > 107 {
		return fmt.Errorf("address %q: want an absolute unix socket path of at most 107 bytes", s.Address)
	}
	for _, e := range s.Environment {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("environment %q: want NAME=value", e)
		}
	}
	return nil
}

// absolutePath accepts an absolute path, or one under the bundle
// placeholder.
func absolutePath(p string) bool {
	return path.IsAbs(p) || strings.HasPrefix(p, BundleDirPlaceholder+"/")
}
