package fetch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

func platformArtifacts(amd, arm testutil.ShimArchive) []testutil.PlatformArtifact {
	return []testutil.PlatformArtifact{
		{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, MediaType: fetch.MediaTypeShimLayer, Title: "demo.tar.gz", Data: amd.Data},
		{Platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}, MediaType: fetch.MediaTypeShimLayer, Title: "demo.tar.gz", Data: arm.Data},
	}
}

func TestOCIFetch(t *testing.T) {
	ctx := context.Background()
	amd := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "amd64\n"})
	arm := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "arm64\n"})
	reg := testutil.StartRegistry(t, "puller", "s3cret")
	v1 := reg.PushShim(t, "shims/demo", "v1", platformArtifacts(amd, arm)...)
	secret := reg.DockerConfigJSON("puller", "s3cret")
	ref := reg.Host + "/shims/demo:v1"

	for _, tc := range []struct {
		name     string
		platform fetch.Platform
		want     testutil.ShimArchive
		arch     string
	}{
		{"amd64", amd64, amd, "amd64\n"},
		{"arm64 as aarch64", fetch.Platform{OS: "linux", Architecture: "aarch64"}, arm, "arm64\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fetch.OCIFetcher{Reference: ref, PlainHTTP: true, DockerConfigJSON: secret}
			dest := filepath.Join(t.TempDir(), "d")
			res, err := f.Fetch(ctx, tc.platform, dest)
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != v1.Digest {
				t.Errorf("digest %s, want the index %s", res.Digest, v1.Digest)
			}
			data, _ := os.ReadFile(filepath.Join(dest, "ARCH"))
			if string(data) != tc.arch {
				t.Errorf("got the %q artifact for %s", data, tc.platform)
			}
			assertShimBinary(t, dest, tc.want)
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		f := &fetch.OCIFetcher{Reference: ref, PlainHTTP: true, DockerConfigJSON: reg.DockerConfigJSON("puller", "wrong")}
		dest := filepath.Join(t.TempDir(), "d")
		_, err := f.Fetch(ctx, amd64, dest)
		if !errors.Is(err, fetch.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		assertEmpty(t, dest)
	})
	t.Run("anonymous against an authenticated registry", func(t *testing.T) {
		_, err := (&fetch.OCIFetcher{Reference: ref, PlainHTTP: true}).Fetch(ctx, amd64, t.TempDir()+"/d")
		if !errors.Is(err, fetch.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
	})
	t.Run("unknown tag", func(t *testing.T) {
		_, err := (&fetch.OCIFetcher{Reference: reg.Host + "/shims/demo:v9", PlainHTTP: true, DockerConfigJSON: secret}).Fetch(ctx, amd64, t.TempDir()+"/d")
		if !errors.Is(err, fetch.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("no layer of an accepted type", func(t *testing.T) {
		f := &fetch.OCIFetcher{Reference: ref, PlainHTTP: true, DockerConfigJSON: secret, MediaTypes: []string{"application/x-other"}}
		dest := filepath.Join(t.TempDir(), "d")
		if _, err := f.Fetch(ctx, amd64, dest); !errors.Is(err, fetch.ErrNoShim) {
			t.Fatalf("err = %v, want ErrNoShim", err)
		}
		assertEmpty(t, dest)
	})

	t.Run("tag moved to another digest; digest reference stays pinned", func(t *testing.T) {
		amd2 := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "amd64\n", "VERSION": "2\n"})
		v2 := reg.PushShim(t, "shims/demo", "v1", platformArtifacts(amd2, arm)...)
		if v2.Digest == v1.Digest {
			t.Fatal("the push did not move the tag")
		}
		cache, err := fetch.NewCache(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		moved := &fetch.OCIFetcher{Reference: ref, PlainHTTP: true, DockerConfigJSON: secret, Options: fetch.Options{Cache: cache}}
		dest := filepath.Join(t.TempDir(), "moved")
		res, err := moved.Fetch(ctx, amd64, dest)
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != v2.Digest {
			t.Errorf("tag fetch got %s, want the moved-to %s", res.Digest, v2.Digest)
		}
		if _, err := os.Stat(filepath.Join(dest, "VERSION")); err != nil {
			t.Errorf("moved tag did not bring the new artifact: %v", err)
		}
		pinned := &fetch.OCIFetcher{Reference: reg.Host + "/shims/demo@" + v1.Digest.String(), PlainHTTP: true, DockerConfigJSON: secret, Options: fetch.Options{Cache: cache}}
		dest = filepath.Join(t.TempDir(), "pinned")
		res, err = pinned.Fetch(ctx, amd64, dest)
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != v1.Digest {
			t.Errorf("pinned fetch got %s, want %s", res.Digest, v1.Digest)
		}
		if _, err := os.Stat(filepath.Join(dest, "VERSION")); !os.IsNotExist(err) {
			t.Error("pinned fetch brought the new artifact")
		}
		// Once more: every layer comes from the cache.
		res, err = pinned.Fetch(ctx, amd64, filepath.Join(t.TempDir(), "again"))
		if err != nil || !res.Cached {
			t.Errorf("third fetch: cached=%v err=%v", res != nil && res.Cached, err)
		}
	})
}

func TestOCISinglePlatformAndBareBinary(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	reg := testutil.StartRegistry(t, "", "")
	reg.PushShim(t, "shims/bare", "v1", testutil.PlatformArtifact{MediaType: fetch.MediaTypeOctetStream, Title: a.BinaryName(), Data: a.Binary})
	f := &fetch.OCIFetcher{Reference: reg.Host + "/shims/bare:v1", PlainHTTP: true}
	dest := filepath.Join(t.TempDir(), "d")
	res, err := f.Fetch(context.Background(), arm64, dest)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dest, a.BinaryName()))
	if err != nil || fi.Mode().Perm() != 0o755 || len(res.Executables) != 1 {
		t.Fatalf("bare binary: %v %v %v", fi, err, res.Executables)
	}
}

func TestLocalFetch(t *testing.T) {
	ctx := context.Background()
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.tar.gz")
	if err := os.WriteFile(file, a.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("file", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "d")
		res, err := (&fetch.LocalFetcher{Path: file, SHA256: a.SHA256}).Fetch(ctx, amd64, dest)
		if err != nil {
			t.Fatal(err)
		}
		assertShim(t, dest, a, res)
	})
	t.Run("file with wrong digest", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "d")
		_, err := (&fetch.LocalFetcher{Path: file, SHA256: testutil.SHA256Hex([]byte("x"))}).Fetch(ctx, amd64, dest)
		if !errors.Is(err, fetch.ErrDigestMismatch) {
			t.Fatalf("err = %v", err)
		}
		assertEmpty(t, dest)
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := (&fetch.LocalFetcher{Path: filepath.Join(dir, "nope")}).Fetch(ctx, amd64, t.TempDir()+"/d")
		if !errors.Is(err, fetch.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("OCI layout", func(t *testing.T) {
		arm := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "arm64\n"})
		reg := testutil.StartRegistry(t, "", "")
		reg.PushShim(t, "shims/demo", "v1", platformArtifacts(a, arm)...)
		layout := filepath.Join(t.TempDir(), "layout")
		store, err := oci.New(layout)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := oras.Copy(ctx, reg.Repository(t, "shims/demo"), "v1", store, "v1", oras.DefaultCopyOptions); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(t.TempDir(), "d")
		res, err := (&fetch.LocalFetcher{Path: layout, Reference: "v1"}).Fetch(ctx, arm64, dest)
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(filepath.Join(dest, "ARCH")); string(data) != "arm64\n" || len(res.Executables) != 1 {
			t.Errorf("layout fetch: ARCH=%q executables=%v", data, res.Executables)
		}
	})
}
