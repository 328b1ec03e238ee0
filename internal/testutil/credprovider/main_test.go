package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAnswersTheKubelet(t *testing.T) {
	var out bytes.Buffer
	req := `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderRequest","image":"10.213.0.1:5000/shims/demo@sha256:ab"}`
	if err := run([]string{"--registry", "10.213.0.1:5000", "--username", "u", "--password", "p"}, strings.NewReader(req), &out); err != nil {
		t.Fatal(err)
	}
	var res response
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "CredentialProviderResponse" || res.APIVersion != apiVersion || res.Auth["10.213.0.1:5000"] != (authConfig{"u", "p"}) {
		t.Errorf("response %s", out.String())
	}
	if err := run(nil, strings.NewReader(`{"apiVersion":"v1","kind":"Pod"}`), &out); err == nil {
		t.Error("a request of another kind was answered")
	}
}
