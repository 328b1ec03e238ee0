package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
)

// published are the options o plans with, as the operator publishes them.
func (o Options) published() shimspec.Published {
	return shimspec.Published{InstallerImage: o.InstallerImage, Namespace: o.Namespace, Preset: o.Preset, ConfigMode: o.ConfigMode,
		RestartTimeout: o.RestartTimeout, ServerVersion: o.ServerVersion, BatchWindow: o.BatchWindow, VerifyPeriod: o.VerifyPeriod,
		MaxRestartingNodes: o.MaxRestartingNodes}
}

// publishOptions writes the options the operator plans with into the
// data of its namespace's shimspec.OptionsConfigMap, which its deployment
// (the chart, operator/config) creates and deletes: the operator never
// creates it, so nothing of it outlives the operator's release. Without
// it, nothing is published (errNotDeployed).
func publishOptions(ctx context.Context, c client.Client, o Options) error {
	data, err := json.Marshal(o.published())
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: shimspec.OptionsConfigMap}}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{shimspec.OptionsKey: string(data)}})
	if err != nil {
		return err
	}
	switch err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("ConfigMap %s/%s: %w", o.Namespace, shimspec.OptionsConfigMap, errNotDeployed)
	case err != nil:
		return fmt.Errorf("publish the operator's options in ConfigMap %s/%s: %w", o.Namespace, shimspec.OptionsConfigMap, err)
	}
	return nil
}

// errNotDeployed: the operator's deployment has no options ConfigMap (a
// deployment of an older release, or one made by hand).
var errNotDeployed = errors.New("not deployed with the operator: its options are not published")
