package containerdconfig

import (
	"io/fs"

	"github.com/shimkit/shimkit/internal/atomicfile"
)

// backupSuffix names the copy of a file's original bytes that shimkit
// versions before the journal kept while a Change was pending; Restore
// still puts one back.
const backupSuffix = ".shimkit-backup"

// WriteFileAtomic replaces path with data so that a reader (or a crash) sees
// either the old or the new bytes, never a mix: it writes a temporary file in
// the same directory, fsyncs it, gives it the mode and owner of the file it
// replaces (or perm for a new file), renames it over path and fsyncs the
// directory.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write("", path, data, perm)
}

// removeFile removes path and fsyncs its directory.
func removeFile(path string) error { return atomicfile.Remove(path) }
