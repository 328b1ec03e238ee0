// Package mdrun runs the shell blocks of a Markdown page, in page order, so
// that a tutorial's commands are the commands a test runs: a page that
// stops working fails the test.
//
// # The page's contract
//
// Parse reads the page's fenced code blocks (``` fences) and returns every
// one of them, in page order, each with its section (the text of the last
// "## " heading above it), the line of its opening fence, its language
// (the fence's info string) and its text. Only blocks whose info string is
// exactly "sh" are run; yaml, console, text and the rest are shown only.
// Two HTML comments, each alone on the line right above a block's fence
// (blank lines between are allowed), change that:
//
//	<!-- tutorial: env -->           the block sets the page's variables (Env): the caller runs its own instead
//	<!-- tutorial: skip REASON -->   the block is not run (Skip is REASON)
//
// Parse fails, naming the line, on a fence that is never closed, a skip
// without a reason, a marker that no fence follows, a marker on a block
// that is not sh, an unknown "tutorial:" marker, and a second env block.
//
// # Running
//
// A Session runs sh blocks one after another as one shell session would:
// each block runs in a new bash (--noprofile --norc) with set -Eeuo
// pipefail, in the working directory and with the exported variables the
// previous block left (variables that are not exported do not carry over,
// as in a script that sources the last one's export -p). The first block
// starts in the Session's directory, with its environment. Standard input
// is /dev/null.
//
// Run guarantees:
//   - a command that fails stops its block there (set -e, pipefail, and
//     unset variables), Run returns an error naming the block's line and
//     the output ends with a line "mdrun: line N: exit status S: COMMAND"
//     giving the page line N of the failing command (bash's own messages,
//     such as an unbound variable's, name page lines too);
//   - a block that ends early (exit, or a heredoc or quote left open) is an
//     error too, and does not change the session's state;
//   - a failed block leaves the session's state as it was before it;
//   - Skip blocks are never run (Run returns nil, nil), Env blocks and
//     blocks that are not sh are refused;
//   - when ctx ends, the block's whole process group is killed.
package mdrun
