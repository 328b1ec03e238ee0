package canarypod

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Pods is what the Runner needs of the API server.
type Pods interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	Get(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Delete(ctx context.Context, namespace, name string) error
}

var (
	_ Pods = (*RESTPods)(nil)
	_ Pods = (*MemoryPods)(nil)
)

// RESTPods talks to the API server with a REST client that knows core/v1
// only: client-go's typed clientset would link every API group into the
// installer.
type RESTPods struct{ c rest.Interface }

// NewRESTPods returns Pods for the API server of cfg (such as
// rest.InClusterConfig's).
func NewRESTPods(cfg *rest.Config) (*RESTPods, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "shimkit-installer"
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return &RESTPods{c: rc}, nil
}

// Create creates the pod.
func (p *RESTPods) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.Post().Namespace(pod.Namespace).Resource("pods").Body(pod).Do(ctx).Into(out)
	return out, err
}

// Get reads the pod.
func (p *RESTPods) Get(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.Get().Namespace(namespace).Resource("pods").Name(name).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the pod at once (grace period 0); a pod already gone is
// no error.
func (p *RESTPods) Delete(ctx context.Context, namespace, name string) error {
	err := p.c.Delete().Namespace(namespace).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// MemoryPods is an in-memory API server for pods, for tests: Kubelet, when
// set, is called with every pod created and sets its status, as a node's
// kubelet would.
type MemoryPods struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod
	n    int
	// Kubelet gives a pod created its status (nil: it stays Pending).
	Kubelet func(pod *corev1.Pod)
	// Report returns the events about a pod (nil: none).
	Report func(pod *corev1.Pod) []corev1.Event
	// Created records every pod created, in order.
	Created []*corev1.Pod
}

// Create stores the pod, naming it from its generateName.
func (m *MemoryPods) Create(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := pod.DeepCopy()
	if p.Name == "" {
		m.n++
		p.Name = fmt.Sprintf("%s%05d", p.GenerateName, m.n)
	}
	if p.UID == "" {
		p.UID = types.UID(fmt.Sprintf("uid-%s-%d", p.Name, m.n))
	}
	if m.pods == nil {
		m.pods = map[string]*corev1.Pod{}
	}
	key := p.Namespace + "/" + p.Name
	if _, ok := m.pods[key]; ok {
		return nil, apierrors.NewAlreadyExists(corev1.Resource("pods"), p.Name)
	}
	if m.Kubelet != nil {
		m.Kubelet(p)
	}
	m.pods[key] = p
	m.Created = append(m.Created, p.DeepCopy())
	return p.DeepCopy(), nil
}

// Get returns a copy of the pod.
func (m *MemoryPods) Get(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return p.DeepCopy(), nil
}

// Delete removes the pod.
func (m *MemoryPods) Delete(_ context.Context, namespace, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, namespace+"/"+name)
	return nil
}

// Len is how many pods exist.
func (m *MemoryPods) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pods)
}
