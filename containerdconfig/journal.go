package containerdconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// journalSuffix names the journal of a file with pending changes. It does
// not end in .toml, so import globs never match it.
const journalSuffix = ".shimkit-journal"

// journal is what <file>.shimkit-journal holds while Changes of the file
// are pending: JSON, written atomically and fsynced before the file is.
//
//	{
//	  "shimkitJournal": 1,
//	  "file": "/etc/containerd/config.toml",
//	  "template": false,
//	  "changes": [
//	    {"id": "5f0c…", "existed": true, "before": "version = 2\n…", "after": "version = 2\n…"}
//	  ]
//	}
//
// changes lists the Changes of one operation, oldest first, each with
// whether the file existed, what it held (before; for a file the Change
// created, seed is what shimkit created it from), and what the Change wrote
// (after) or that it removed the file (removed). So the oldest original
// and the newest written bytes are both there. Bytes are JSON strings when
// they are UTF-8 (as TOML is) and {"base64": "…"} otherwise.
type journal struct {
	Format   int            `json:"shimkitJournal"`
	File     string         `json:"file,omitempty"` // the node path, for messages
	Template bool           `json:"template,omitempty"`
	Changes  []journalEntry `json:"changes"`
}

type journalEntry struct {
	ID      string `json:"id"`
	Existed bool   `json:"existed"`
	Before  text   `json:"before,omitempty"`
	Seed    text   `json:"seed,omitempty"`
	Removed bool   `json:"removed,omitempty"`
	After   text   `json:"after,omitempty"`
	// CreatedDirs are the directories (node paths, deepest first) the
	// change created for the file; undone with it while empty.
	CreatedDirs []string `json:"createdDirs,omitempty"`
}

const journalFormat = 1

// drop removes the change with that id and reports whether it was there.
func (j *journal) drop(id string) bool {
	n := len(j.Changes)
	j.Changes = slices.DeleteFunc(j.Changes, func(e journalEntry) bool { return e.ID == id })
	return len(j.Changes) != n
}

// file returns the node path the journal names, or local.
func (j *journal) file(local string) string {
	if j.File != "" {
		return j.File
	}
	return local
}

// readJournal reads the journal of the file at local, if there is one.
func readJournal(local string) (*journal, bool, error) {
	data, ok, err := readOptional(local + journalSuffix)
	if err != nil || !ok {
		return nil, false, err
	}
	j := &journal{}
	if err := json.Unmarshal(data, j); err != nil {
		return nil, false, &FileError{Path: local + journalSuffix, Err: fmt.Errorf("journal does not parse: %w", err)}
	}
	if j.Format != journalFormat {
		return nil, false, &FileError{Path: local + journalSuffix, Err: fmt.Errorf("journal format %d is not %d, which this shimkit writes", j.Format, journalFormat)}
	}
	return j, true, nil
}

// updateJournal reads the journal of the file at local (a new one when
// there is none), applies fn, and when fn reports a change writes it back
// durably, or removes it when no change is left.
func updateJournal(local, nodePath string, template bool, fn func(*journal) (bool, error)) error {
	j, ok, err := readJournal(local)
	if err != nil {
		return err
	}
	if !ok {
		j = &journal{Format: journalFormat, File: nodePath, Template: template}
	}
	switch changed, err := fn(j); {
	case err != nil:
		return err
	case !changed:
		return nil
	case len(j.Changes) == 0 && ok:
		return removeFile(local + journalSuffix)
	case len(j.Changes) == 0:
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep shimkit's markers (>>>, <<<) readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(j); err != nil {
		return err
	}
	return WriteFileAtomic(local+journalSuffix, b.Bytes(), 0o600)
}

// text is file content in a journal.
type text []byte

func (t text) MarshalJSON() ([]byte, error) {
	if utf8.Valid(t) {
		return json.Marshal(string(t))
	}
	return json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(t)})
}

func (t *text) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*t = text(s)
		return nil
	}
	var m struct {
		Base64 string `json:"base64"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	b, err := base64.StdEncoding.DecodeString(m.Base64)
	*t = b
	return err
}
