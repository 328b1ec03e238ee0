// Command credprovider is a kubelet image credential provider (the exec
// plugin protocol, credentialprovider.kubelet.k8s.io/v1) for the test
// cluster: it answers every request with the username and password of
// its flags for the registry of its flag, as a cloud's provider answers
// with the node's short-lived token.
//
//	credprovider --registry 10.213.0.1:5000 --username u --password p
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

const apiVersion = "credentialprovider.kubelet.k8s.io/v1"

type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Image      string `json:"image"`
}

type authConfig struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type response struct {
	APIVersion    string                `json:"apiVersion"`
	Kind          string                `json:"kind"`
	CacheKeyType  string                `json:"cacheKeyType"`
	CacheDuration string                `json:"cacheDuration"`
	Auth          map[string]authConfig `json:"auth"`
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "credprovider:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("credprovider", flag.ContinueOnError)
	registry := fs.String("registry", "", "the registry host[:port] the credentials are for")
	username := fs.String("username", "", "")
	password := fs.String("password", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var req request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	if req.APIVersion != apiVersion || req.Kind != "CredentialProviderRequest" {
		return fmt.Errorf("a %s %s, want a %s CredentialProviderRequest", req.APIVersion, req.Kind, apiVersion)
	}
	return json.NewEncoder(out).Encode(response{
		APIVersion: apiVersion, Kind: "CredentialProviderResponse",
		// Asked again after a second: removing the plugin shows at once.
		CacheKeyType: "Registry", CacheDuration: "1s",
		Auth: map[string]authConfig{*registry: {Username: *username, Password: *password}},
	})
}
