package operator

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
)

// published are the options o plans with, as the operator publishes them.
func (o Options) published() shimspec.Published {
	return shimspec.Published{InstallerImage: o.InstallerImage, Namespace: o.Namespace, Preset: o.Preset, ConfigMode: o.ConfigMode,
		RestartTimeout: o.RestartTimeout, ServerVersion: o.ServerVersion, BatchWindow: o.BatchWindow, VerifyPeriod: o.VerifyPeriod,
		MaxRestartingNodes: o.MaxRestartingNodes}
}

// optionsFieldOwner is the field manager of the published options.
const optionsFieldOwner = "shimkit-operator"

// publishOptions writes the options the operator plans with into its
// namespace's shimspec.OptionsConfigMap, by server-side apply (the
// operator's field owner): kubectl shimkit plan reads them.
func publishOptions(ctx context.Context, c client.Client, o Options) error {
	data, err := json.Marshal(o.published())
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: shimspec.OptionsConfigMap,
			Labels: map[string]string{jobview.LabelManagedBy: jobview.ManagedBy}},
		Data: map[string]string{shimspec.OptionsKey: string(data)},
	}
	if err := c.Patch(ctx, cm, client.Apply, client.FieldOwner(optionsFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("publish the operator's options in ConfigMap %s/%s: %w", o.Namespace, shimspec.OptionsConfigMap, err)
	}
	return nil
}
