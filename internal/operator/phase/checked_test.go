package phase_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/internal/operator/phase"
)

func TestChecked(t *testing.T) {
	node := func() *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}} }
	calls := map[string]func(context.Context, client.Client) error{
		"get": func(ctx context.Context, c client.Client) error {
			return c.Get(ctx, client.ObjectKey{Name: "n1"}, node())
		},
		"list": func(ctx context.Context, c client.Client) error { return c.List(ctx, &corev1.NodeList{}) },
		"create": func(ctx context.Context, c client.Client) error {
			return c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
		},
		"patch": func(ctx context.Context, c client.Client) error {
			return c.Patch(ctx, node(), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"a":"b"}}}`)))
		},
		"status patch": func(ctx context.Context, c client.Client) error {
			return c.Status().Patch(ctx, node(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"delete": func(ctx context.Context, c client.Client) error { return c.Delete(ctx, node()) },
	}
	write := map[string]bool{"create": true, "patch": true, "status patch": true, "delete": true}
	for name, call := range calls {
		for _, tc := range []struct {
			state    string
			ctx      func() context.Context
			reported error
		}{
			{"outside a reconcile", context.Background, nil},
			{"observing", func() context.Context { return phase.Start(context.Background()) }, map[bool]error{true: phase.ErrWriteBeforeDecision}[write[name]]},
			{"acting", func() context.Context {
				ctx := phase.Start(context.Background())
				phase.Decided(ctx)
				return ctx
			}, map[bool]error{false: phase.ErrReadAfterDecision}[write[name]]},
		} {
			t.Run(name+"/"+tc.state, func(t *testing.T) {
				var got []error
				c := phase.Checked(fake.NewClientBuilder().WithObjects(node()).Build(), func(err error) { got = append(got, err) })
				err := call(tc.ctx(), c)
				switch {
				case tc.reported == nil && len(got) > 0:
					t.Fatalf("reported %v", got)
				case tc.reported != nil && (len(got) != 1 || !errors.Is(got[0], tc.reported)):
					t.Fatalf("reported %v, want one %v", got, tc.reported)
				}
				refused := errors.Is(err, phase.ErrWriteBeforeDecision)
				if refused != (tc.reported == phase.ErrWriteBeforeDecision) {
					t.Fatalf("call returned %v", err)
				}
				if !refused && err != nil {
					t.Fatalf("call: %v", err)
				}
			})
		}
	}
}

func TestOf(t *testing.T) {
	if s := phase.Of(context.Background()); s != phase.None {
		t.Fatalf("background: %v", s)
	}
	ctx := phase.Start(context.Background())
	if s := phase.Of(ctx); s != phase.Observing {
		t.Fatalf("started: %v", s)
	}
	phase.Decided(ctx)
	if s := phase.Of(ctx); s != phase.Acting {
		t.Fatalf("decided: %v", s)
	}
	phase.Decided(context.Background()) // no-op
}
