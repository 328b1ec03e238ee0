// Package v1alpha1 is the Shim API, containerd.x-k8s.io/v1alpha1: a
// cluster-scoped resource that describes a containerd shim, which nodes get
// it, how it is fetched, the RuntimeClass that schedules onto it, and how a
// change rolls out. It imports only the standard library and apimachinery,
// so any client can use it.
//
// Admission rejects bad specs (CEL rules and OpenAPI validation in the
// generated CRD, operator/config/crd/bases), with messages that name the
// field.
//
// +kubebuilder:object:generate=true
// +groupName=containerd.x-k8s.io
package v1alpha1
