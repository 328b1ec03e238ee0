package fetch

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow bounds the memory a zstd stream may ask of the decoder:
// 128 MiB, the window of `zstd --long=27`; `tar --zstd` and `zstd -19`
// use 8 MiB at most.
const maxZstdWindow = 128 << 20

// compression is a compressed tar format an artifact may come in.
type compression struct {
	name string
	// open returns the decompressed stream and what releases it.
	open func(r io.Reader) (io.Reader, func(), error)
}

// compressionOf returns the compression of released shim tarballs that
// head starts with, or nil: gzip (.tar.gz, most shims), zstd and bzip2
// (gVisor's gvisor.tar.zstd and gvisor.tar.bz2; bzip2's magic is "BZh"
// and a block size of 1 to 9).
func compressionOf(head []byte) *compression {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return &compression{name: "gzip", open: func(r io.Reader) (io.Reader, func(), error) {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, nil, err
			}
			return zr, func() { zr.Close() }, nil
		}}
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return &compression{name: "zstd", open: func(r io.Reader) (io.Reader, func(), error) {
			zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow))
			if err != nil {
				return nil, nil, err
			}
			return zr, zr.Close, nil
		}}
	case len(head) >= 4 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9':
		return &compression{name: "bzip2", open: func(r io.Reader) (io.Reader, func(), error) {
			return bzip2.NewReader(r), func() {}, nil
		}}
	}
	return nil
}

// limitOf marks a decoder's refusal of a stream over its memory bound as
// ErrLimit.
func limitOf(err error) error {
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return fmt.Errorf("%w: %w", ErrLimit, err)
	}
	return err
}
