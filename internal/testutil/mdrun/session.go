package mdrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Session runs the sh blocks of a page one after another, each in the
// shell state (exported variables, working directory) the earlier ones
// left.
type Session struct {
	dir string
	env []string
	// exports restores the variables the last block exported (its
	// export -p); empty before the first block. dir is where it ended.
	exports string
	// Output, when set, also receives every block's output as it is
	// written (Run returns it whole in any case).
	Output io.Writer
	// Bash is the bash to run; default: bash on the PATH.
	Bash string
}

// NewSession returns a Session whose first block runs in dir with the
// environment env (as os/exec's Cmd.Env: nil is this process's
// environment). Put on env what the page's env block would set, and what
// the commands need (PATH, KUBECONFIG, ...).
func NewSession(dir string, env []string) *Session {
	if env == nil {
		env = os.Environ()
	}
	return &Session{dir: dir, env: append([]string(nil), env...)}
}

// Run runs b.Text in the session (see the package documentation) and
// returns its combined standard output and error. A Skip block is not run
// (nil, nil); an Env block, and a block that is not sh, is refused.
func (s *Session) Run(ctx context.Context, b Block) ([]byte, error) {
	switch {
	case b.Skip != "":
		return nil, nil
	case b.Env:
		return nil, fmt.Errorf("block at %s is the page's env block: set its variables in the Session's environment instead of running it", b.Where())
	case b.Lang != "sh":
		return nil, fmt.Errorf("block at %s is %s, not sh: it is shown, never run", b.Where(), langName(b.Lang))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mdrun-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	exportsFile, dirFile := filepath.Join(tmp, "exports"), filepath.Join(tmp, "dir")
	script := filepath.Join(tmp, "block.sh")

	var prelude strings.Builder
	if s.exports != "" {
		// Loaded before set -e: bash's own read-only variables (SHELLOPTS,
		// BASHOPTS when exported) cannot be declared again, and need not be.
		fmt.Fprintf(&prelude, "{\n%s\n} 2>/dev/null\n", strings.TrimSuffix(s.exports, "\n"))
	}
	fmt.Fprintf(&prelude, "set -Eeuo pipefail\ncd -- %s\n", quote(s.dir))
	// The page line of a failing command: LINENO counts the script's lines,
	// the block's first line is the fence's next one.
	first := strings.Count(prelude.String(), "\n") + 2 // the trap's own line comes first
	fmt.Fprintf(&prelude, "trap '__mdrun_rc=$?; if [ \"$BASH_SUBSHELL\" -eq 0 ]; then printf \"mdrun: line %%d: exit status %%d: %%s\\n\" \"$((LINENO + %d))\" \"$__mdrun_rc\" \"$BASH_COMMAND\" >&2; fi' ERR\n", b.Line+1-first)
	text := b.Text
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	epilogue := fmt.Sprintf("trap - ERR\n(unset SHLVL; export -p) >%s\nprintf '%%s' \"$PWD\" >%s\n", quote(exportsFile), quote(dirFile))
	if err := os.WriteFile(script, []byte(prelude.String()+text+epilogue), 0o600); err != nil {
		return nil, err
	}

	bash := s.Bash
	if bash == "" {
		if bash, err = exec.LookPath("bash"); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc", script)
	cmd.Dir = s.dir
	cmd.Env = s.env
	if s.exports != "" {
		cmd.Env = []string{} // the exports declare every exported variable, and no unset one
	}
	var out bytes.Buffer
	var w io.Writer = &out
	if s.Output != nil {
		w = io.MultiWriter(&out, s.Output)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	runErr := cmd.Run()
	killProcessGroup(cmd) // what the block started in the background goes with it
	if runErr != nil {
		output := pageLines(out.Bytes(), script, b.Line+1-first)
		if ctx.Err() != nil {
			return output, fmt.Errorf("block at %s: %w (%v)", b.Where(), ctx.Err(), runErr)
		}
		return output, fmt.Errorf("block at %s failed: %w (the output's last mdrun line names the failing command's line)", b.Where(), runErr)
	}
	// The directory is written last: without it, the block did not reach
	// its end.
	dir, err := os.ReadFile(dirFile)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(dir) == 0 {
		return out.Bytes(), fmt.Errorf("block at %s ended before its last line: an exit, or a heredoc or quote left open", b.Where())
	}
	if err != nil {
		return out.Bytes(), err
	}
	exports, err := os.ReadFile(exportsFile)
	if err != nil {
		return out.Bytes(), err
	}
	s.exports, s.dir = string(exports), string(dir)
	return out.Bytes(), nil
}

// pageLines rewrites bash's own messages about the script's lines (an
// unbound variable, a syntax error: "SCRIPT: line N: ...") to name the
// page's lines.
func pageLines(out []byte, script string, offset int) []byte {
	re := regexp.MustCompile(regexp.QuoteMeta(script) + `: line ([0-9]+):`)
	return re.ReplaceAllFunc(out, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(re.FindSubmatch(m)[1]))
		return fmt.Appendf(nil, "mdrun: line %d:", n+offset)
	})
}

// quote is s in single quotes, for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
