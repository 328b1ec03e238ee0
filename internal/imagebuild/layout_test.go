package imagebuild_test

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// readIndexJSON reads index.json of an OCI image layout archive.
func readIndexJSON(t *testing.T, archive string) ocispec.Index {
	t.Helper()
	var idx ocispec.Index
	if err := json.Unmarshal(fileOf(t, archive, "index.json"), &idx); err != nil {
		t.Fatal(err)
	}
	if layout := fileOf(t, archive, "oci-layout"); !json.Valid(layout) {
		t.Errorf("oci-layout: %q", layout)
	}
	return idx
}

// blob reads blobs/sha256/<hex> of an OCI image layout archive.
func blob(t *testing.T, archive, hex string) []byte {
	t.Helper()
	return fileOf(t, archive, "blobs/sha256/"+hex)
}

func fileOf(t *testing.T, archive, name string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s: no %s", archive, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}
