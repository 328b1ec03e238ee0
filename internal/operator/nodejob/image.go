package nodejob

import (
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
)

// Where a Shim's image (plan.SourceImage) is in the installer's pod, and
// the copier of the fallback.
const (
	imagesDir = "/shimkit/images"
	toolsDir  = "/shimkit/tools"
	// copier is the installer's own static binary, put in the tools
	// emptyDir so that it runs in an image without a shell or a libc.
	copier = toolsDir + "/shimkit-installer"
)

// ImageDir is where the files of the Shim's image are in the installer's
// pod: the plan's Artifact.Path.
func ImageDir(shim string) string { return path.Join(imagesDir, shim) }

// The two ways an image reaches the installer.
const (
	// ImageVolume: the kubelet mounts image@digest read-only (an image
	// volume: Kubernetes 1.35+, containerd 2.1+).
	ImageVolume = "ImageVolume"
	// ImageCopy: an init container of the image copies its files into an
	// emptyDir, with the copier an init container of the installer's
	// image put there first (where image volumes are not served).
	ImageCopy = "Copy"
)

// WithImages gives the pod the images of the plans' image artifacts, in
// the Spec's way (Spec.ImageWay), and the Spec's pull secret as its
// imagePullSecrets: the kubelet pulls them as it pulls any image of the
// node (its mirrors, credential providers and cache). Build does it for
// its plan; a Job carrying several plans (a NodePlanList) adds the
// others' with it. Images already there are not added twice.
func WithImages(pod *corev1.PodSpec, plans []*plan.NodePlan, s Spec) {
	var images []*plan.Artifact
	for _, p := range plans {
		if a := p.Artifact; a != nil && a.Type == plan.SourceImage && !slices.ContainsFunc(images, func(b *plan.Artifact) bool { return b.Path == a.Path }) {
			images = append(images, a)
		}
	}
	if len(images) == 0 {
		return
	}
	if s.PullSecret != "" && !slices.ContainsFunc(pod.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == s.PullSecret }) {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, corev1.LocalObjectReference{Name: s.PullSecret})
	}
	installer := &pod.Containers[0]
	copying := s.ImageWay == ImageCopy
	if copying && !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "shimkit-tools" }) {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "shimkit-tools", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: "copier", Image: s.Image, ImagePullPolicy: s.ImagePullPolicy,
			Args:         []string{"copy-self", copier},
			VolumeMounts: []corev1.VolumeMount{{Name: "shimkit-tools", MountPath: toolsDir}},
		})
	}
	for _, a := range images {
		name := imageVolumeName(a.Path)
		if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == name }) {
			continue
		}
		mount := corev1.VolumeMount{Name: name, MountPath: a.Path, ReadOnly: true}
		if !copying {
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
				Reference: a.Reference, PullPolicy: corev1.PullIfNotPresent,
			}}})
			installer.VolumeMounts = append(installer.VolumeMounts, mount)
			continue
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		installer.VolumeMounts = append(installer.VolumeMounts, mount)
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: name, Image: a.Reference, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{copier, "copy-image", a.Path},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "shimkit-tools", MountPath: toolsDir, ReadOnly: true},
				{Name: name, MountPath: a.Path},
			},
			// The image's files belong to whoever built it: read them as
			// root, change nothing of the node.
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), AllowPrivilegeEscalation: ptr.To(false)},
		})
	}
}

// imageVolumeName names the volume of an image directory.
func imageVolumeName(dir string) string { return labelName("image", dir) }
