package crioconfig

import (
	"errors"
	"fmt"
)

// Sentinel errors, checked with errors.Is. Every refusal happens before
// anything on the node is written.
var (
	// ErrInvalidHandler: the handler asked for is not one CRI-O would load
	// (a name that is not a DNS label, a runtime_type other than oci or vm,
	// a vm binary not named containerd-shim-*-v2, an allowed annotation
	// CRI-O does not know, a container_min_memory it cannot parse, ...).
	ErrInvalidHandler = errors.New("invalid CRI-O runtime handler")
	// ErrBinary: the handler's runtime_path (or a vm handler's
	// runtime_config_path) is missing, not a regular file, or not
	// executable. CRI-O would drop the handler with a warning only.
	ErrBinary = errors.New("runtime binary unusable")
	// ErrParse: a file CRI-O reads is not valid TOML, or not of the types
	// CRI-O decodes; CRI-O would not start.
	ErrParse = errors.New("CRI-O config does not parse")
	// ErrForeignHandler: a file CRI-O reads that shimkit did not write
	// defines a runtime handler of that name (an admin's, another tool's).
	// CRI-O's later file would replace the whole handler, so shimkit
	// neither adds its own beside it nor takes it over.
	ErrForeignHandler = errors.New("runtime handler defined by someone else")
	// ErrNotOurs: the drop-in at shimkit's path has no ownership record
	// (someone else wrote it), belongs to another owner, or was changed
	// after shimkit wrote it. It is left as it is.
	ErrNotOurs = errors.New("drop-in not written by this owner or changed since")
	// ErrReserved: the name is CRI-O's default runtime (default_runtime,
	// crun when no file sets it), which CRI-O defines itself.
	ErrReserved = errors.New("reserved runtime handler name")
	// ErrPending: a change of this handler was interrupted (its journal is
	// still there); Restore must run first.
	ErrPending = errors.New("unfinished change of this handler")
	// ErrConcurrentEdit: undoing a change found a file someone else changed
	// after shimkit wrote it; the file was left exactly as it is.
	ErrConcurrentEdit = errors.New("file changed by another writer after shimkit")
	// ErrRestartStopsPods: a restart of CRI-O would stop every pod of the
	// node (Snapshot.CheckRestart): cgroup_manager is cgroupfs on a
	// cgroup v1 host, where CRI-O leaves each conmon in crio.service's
	// cgroup, which systemd stops with the service.
	ErrRestartStopsPods = errors.New("a restart of CRI-O would stop every pod of the node")
)

// Reasons are the exported names of the sentinels above, for a status or
// a result that crosses a process boundary (see Reason).
const (
	ReasonInvalidHandler   = "InvalidHandler"
	ReasonBinary           = "RuntimeBinaryUnusable"
	ReasonParse            = "ConfigParseError"
	ReasonForeignHandler   = "ForeignHandler"
	ReasonNotOurs          = "NotOurs"
	ReasonReserved         = "ReservedHandler"
	ReasonPending          = "PendingChange"
	ReasonConcurrentEdit   = "ConcurrentEdit"
	ReasonRestartStopsPods = "RestartStopsPods"
)

var reasons = []struct {
	err    error
	reason string
}{
	{ErrInvalidHandler, ReasonInvalidHandler},
	{ErrBinary, ReasonBinary},
	{ErrParse, ReasonParse},
	{ErrForeignHandler, ReasonForeignHandler},
	{ErrNotOurs, ReasonNotOurs},
	{ErrReserved, ReasonReserved},
	{ErrPending, ReasonPending},
	{ErrConcurrentEdit, ReasonConcurrentEdit},
	{ErrRestartStopsPods, ReasonRestartStopsPods},
}

// Reason returns the exported reason of the first sentinel err wraps, or
// "" when it wraps none of this package's.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ""
}

// FileError names the file (a path on the node) an error is about.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }

func fileErr(path string, sentinel error, format string, args ...any) error {
	return &FileError{Path: path, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
