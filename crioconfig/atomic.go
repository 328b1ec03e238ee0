package crioconfig

import (
	"io/fs"

	"github.com/shimkit/shimkit/internal/atomicfile"
)

// writeVia replaces path with data through a temporary file in tmpDir, a
// directory on the same filesystem but outside path's directory: CRI-O
// loads every file of its drop-in directory, so not even a temporary file
// of shimkit may appear there (atomicfile.Write).
func writeVia(tmpDir, path string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(tmpDir, path, data, perm)
}

// removeFile removes path and fsyncs its directory.
func removeFile(path string) error { return atomicfile.Remove(path) }
