// Package fetch gets a shim artifact onto a node safely: over anonymous
// HTTP(S) (HTTPFetcher, the Shim API's anonHttp strategy), from an OCI
// registry through oras-go (OCIFetcher), or from a local file or OCI image
// layout for air-gapped nodes and image builds (LocalFetcher). All three
// implement Fetcher.
//
// # Guarantees
//
//   - Verify before use. The artifact is hashed while it streams into a
//     content-addressed Cache; it becomes visible there, and is extracted,
//     only after its sha256 matched the expected digest (the HTTP
//     artifact's SHA256, the OCI descriptor's digest). A mismatch, a
//     truncated body or a body over Limits.MaxDownload fails at once.
//   - Retry only what is worth retrying: 5xx answers and timeouts, with
//     exponential backoff. A 404, a digest mismatch or refused credentials
//     fail at once with ErrNotFound, ErrDigestMismatch or ErrUnauthorized.
//     The context deadline bounds everything; proxy variables are honoured.
//   - Extract safely. Tarballs (plain, or compressed with gzip, zstd or
//     bzip2) and bare binaries are recognised by content, not by name.
//     Extraction goes through os.Root into a staging directory inside the
//     destination, and moves into place only when the whole archive passed:
//     absolute paths, "..", symlinks or hardlinks that leave the
//     destination, and device or fifo entries fail with ErrUnsafeArchive;
//     more bytes or entries than Limits allow, or a zstd window over 128
//     MiB, fail with ErrLimit. After any error the destination is as it was.
//   - Only regular files whose names match Options.Executables (default
//     containerd-shim-*) are made executable; archive modes are not trusted.
//   - A node never downloads the same digest twice: with a digest known in
//     advance the cache answers without any request, and concurrent fetches
//     of the same artifact coalesce into one download.
//   - OCI: a tag is resolved on every fetch (tags move); a digest reference
//     pins the artifact. From an image index the manifest of the requested
//     platform is chosen (linux/amd64 or linux/arm64, with the aliases
//     x86_64 and aarch64); layers are chosen by media type. Credentials
//     come from a Kubernetes .dockerconfigjson.
//   - Transport policy, for every client the package uses (HTTPFetcher's
//     downloads, and the registry client of NewRepository, including blob
//     redirects to storage), also when the caller supplies the client (a
//     copy gets the policy; the caller's CheckRedirect still runs after
//     it): a redirect from https to http fails with ErrInsecure, more than
//     10 redirects with ErrTooManyRedirects, naming the hops; neither is
//     retried. Plain HTTP to a registry (PlainHTTP) is allowed only when it
//     is a LocalRegistry (loopback, or a cluster Service name); to any
//     other it fails with ErrInsecure before a request is made, unless
//     Insecure opts in.
//   - Resolve once, fetch everywhere: ResolveOCI turns a tag into the
//     digest of its index or manifest, and HTTPFetcher.Digest gives an
//     HTTP artifact's sha256 (streamed, nothing stored; an artifact with a
//     SHA256 already is pinned and needs no request). A controller resolves
//     once and hands every node the pinned reference or digest, so that all
//     nodes install the same artifact even when the tag or the file behind
//     the URL moves. HTTPFetcher.Get fetches the signature next to it.
//
// The package needs no cluster and no containerd; the node-side installer
// and image-building tools use it alike.
package fetch
