package mdrun

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one fenced code block of a page.
type Block struct {
	// Section is the title of the "## " heading the block is under ("" above
	// the first one).
	Section string
	// Line is the 1-based line of the block's opening fence.
	Line int
	// Lang is the fence's info string ("sh", "yaml", ...; "" for none).
	Lang string
	// Text is the block's content, each line ending in a newline.
	Text string
	// Skip is the reason of a "<!-- tutorial: skip REASON -->" marker; ""
	// when the block is not skipped.
	Skip string
	// Env is true for the block after "<!-- tutorial: env -->": it sets
	// the page's variables, and the caller sets its own instead.
	Env bool
}

// Runs reports whether a Session runs the block: an sh block, neither
// skipped nor the env block.
func (b Block) Runs() bool { return b.Lang == "sh" && b.Skip == "" && !b.Env }

// Where names the block for messages: its line and section.
func (b Block) Where() string {
	if b.Section == "" {
		return fmt.Sprintf("line %d", b.Line)
	}
	return fmt.Sprintf("line %d (%s)", b.Line, b.Section)
}

var (
	fenceRE  = regexp.MustCompile("^( {0,3})(`{3,})[ \t]*([^`]*?)[ \t]*$")
	markerRE = regexp.MustCompile(`^<!--\s*tutorial:\s*(.*?)\s*-->$`)
)

// marker is a tutorial comment waiting for its block.
type marker struct {
	line int
	env  bool
	skip string
}

// Parse returns the fenced code blocks of the Markdown page src in page
// order (see the package documentation for the markers it reads).
func Parse(src []byte) ([]Block, error) {
	lines := strings.Split(string(src), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var (
		blocks  []Block
		section string
		pending *marker
		envLine int
	)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		trimmed := strings.TrimSpace(line)
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			indent, fence, lang := len(m[1]), m[2], m[3]
			b := Block{Section: section, Line: i + 1, Lang: lang}
			var text strings.Builder
			closed := false
			for i++; i < len(lines); i++ {
				l := strings.TrimSuffix(lines[i], "\r")
				if c := strings.TrimSpace(l); strings.HasPrefix(c, fence) && strings.Trim(c, "`") == "" && len(l)-len(strings.TrimLeft(l, " ")) <= 3 {
					closed = true
					break
				}
				for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
					l = l[1:]
				}
				text.WriteString(l)
				text.WriteByte('\n')
			}
			if !closed {
				return nil, fmt.Errorf("line %d: the %s block's fence is never closed", b.Line, langName(lang))
			}
			b.Text = text.String()
			if pending != nil {
				if lang != "sh" {
					return nil, fmt.Errorf("line %d: the tutorial marker marks a %s block, which is never run: only sh blocks are", pending.line, langName(lang))
				}
				b.Env, b.Skip = pending.env, pending.skip
				if b.Env {
					if envLine != 0 {
						return nil, fmt.Errorf("line %d: a second env block (the first is at line %d)", b.Line, envLine)
					}
					envLine = b.Line
				}
				pending = nil
			}
			blocks = append(blocks, b)
			continue
		}
		if m := markerRE.FindStringSubmatch(trimmed); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("line %d: a tutorial marker not followed by a fence", pending.line)
			}
			mk := &marker{line: i + 1}
			word, reason, _ := strings.Cut(m[1], " ")
			switch {
			case m[1] == "env":
				mk.env = true
			case word == "skip" && strings.TrimSpace(reason) != "":
				mk.skip = strings.TrimSpace(reason)
			case word == "skip":
				return nil, fmt.Errorf("line %d: <!-- tutorial: skip --> without a reason: say why the block is not run", i+1)
			default:
				return nil, fmt.Errorf("line %d: unknown tutorial marker %q: want env or skip REASON", i+1, m[1])
			}
			pending = mk
			continue
		}
		if pending != nil && trimmed != "" {
			return nil, fmt.Errorf("line %d: a tutorial marker not followed by a fence (line %d is text)", pending.line, i+1)
		}
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("line %d: a tutorial marker not followed by a fence (the page ends)", pending.line)
	}
	return blocks, nil
}

func langName(lang string) string {
	if lang == "" {
		return "plain"
	}
	return lang
}
