package signature_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/shimkit/shimkit/signature"
)

// A publisher signs a shim download as cosign sign-blob --bundle does; a
// node checks the bundle against the sha256 it pinned, without the bytes.
func ExampleVerifier_VerifyBlob() {
	shim := []byte("containerd-shim-demo-v1, the binary")

	// The publisher's side: a key, and a sigstore bundle signing the shim.
	key, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		panic(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: shim}, key, sign.BundleOptions{})
	if err != nil {
		panic(err)
	}
	sig, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		panic(err)
	}
	publicKey, err := key.GetPublicKeyPem()
	if err != nil {
		panic(err)
	}

	// The node's side: a policy trusting the key, and the pinned digest.
	v, err := signature.NewVerifier(signature.Policy{PublicKeys: [][]byte{[]byte(publicKey)}})
	if err != nil {
		panic(err)
	}
	signer, err := v.VerifyBlob(context.Background(), digest.FromBytes(shim), sig)
	if err != nil {
		panic(err)
	}
	fmt.Println("signed by a key:", strings.HasPrefix(signer.String(), "key sha256:"))

	_, err = v.VerifyBlob(context.Background(), digest.FromString("another shim"), sig)
	fmt.Println("another shim:", errors.Is(err, signature.ErrInvalid))
	// Output:
	// signed by a key: true
	// another shim: true
}
