package phase

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Report receives each call made out of phase: ErrWriteBeforeDecision or
// ErrReadAfterDecision, wrapped with the call and its object.
type Report func(error)

// Checked wraps c: every write made while the calling reconcile observes
// is reported and refused, every read made once it acts is reported (and
// made). Calls outside a reconcile pass unchecked.
func Checked(c client.Client, report Report) client.Client {
	return &checkedClient{Client: c, report: report}
}

// CheckedReader wraps r as Checked does a client's reads.
func CheckedReader(r client.Reader, report Report) client.Reader {
	return &checkedReader{r: r, report: report}
}

type checkedClient struct {
	client.Client
	report Report
}

var _ client.Client = (*checkedClient)(nil)

// write reports and refuses a write made while observing.
func write(ctx context.Context, report Report, verb string, obj any) error {
	if Of(ctx) != Observing {
		return nil
	}
	err := fmt.Errorf("%s %s: %w", verb, describe(obj), ErrWriteBeforeDecision)
	report(err)
	return err
}

// read reports a read made while acting.
func read(ctx context.Context, report Report, verb string, obj any) {
	if Of(ctx) == Acting {
		report(fmt.Errorf("%s %s: %w", verb, describe(obj), ErrReadAfterDecision))
	}
}

func describe(obj any) string {
	name := ""
	if o, ok := obj.(client.Object); ok {
		name = " " + client.ObjectKeyFromObject(o).String()
	}
	t := reflect.TypeOf(obj)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "<nil>" + name
	}
	return t.Name() + name
}

func (c *checkedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	read(ctx, c.report, "get", obj)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *checkedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	read(ctx, c.report, "list", list)
	return c.Client.List(ctx, list, opts...)
}

func (c *checkedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := write(ctx, c.report, "create", obj); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *checkedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := write(ctx, c.report, "update", obj); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *checkedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := write(ctx, c.report, "patch", obj); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *checkedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := write(ctx, c.report, "apply", obj); err != nil {
		return err
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *checkedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := write(ctx, c.report, "delete", obj); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *checkedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := write(ctx, c.report, "delete all of", obj); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *checkedClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *checkedClient) SubResource(name string) client.SubResourceClient {
	return &checkedSub{SubResourceClient: c.Client.SubResource(name), name: name, report: c.report}
}

type checkedSub struct {
	client.SubResourceClient
	name   string
	report Report
}

func (s *checkedSub) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	read(ctx, s.report, "get "+s.name+" of", obj)
	return s.SubResourceClient.Get(ctx, obj, sub, opts...)
}

func (s *checkedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := write(ctx, s.report, "create "+s.name+" of", obj); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *checkedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := write(ctx, s.report, "update "+s.name+" of", obj); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *checkedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := write(ctx, s.report, "patch "+s.name+" of", obj); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *checkedSub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := write(ctx, s.report, "apply "+s.name+" of", obj); err != nil {
		return err
	}
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

type checkedReader struct {
	r      client.Reader
	report Report
}

func (c *checkedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	read(ctx, c.report, "get", obj)
	return c.r.Get(ctx, key, obj, opts...)
}

func (c *checkedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	read(ctx, c.report, "list", list)
	return c.r.List(ctx, list, opts...)
}
