// Package release renders the one-file install: config/default built with
// kustomize, with the manager's image set.
package release

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// baseImage is the placeholder config/manager names the image by.
const baseImage = "image: multislice:latest"

// Install builds the kustomization in dir (config/default) and returns
// install.yaml for image: apply it with `kubectl apply --server-side -f`.
func Install(dir, image string) ([]byte, error) {
	if image == "" {
		return nil, fmt.Errorf("no image: name the reference your cluster pulls, e.g. IMAGE=ghcr.io/you/multislice:v0.1.0")
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // Namespace and CRD first, webhooks last, as `kustomize build`
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	manifest, err := resources.AsYaml()
	if err != nil {
		return nil, err
	}
	if n := bytes.Count(manifest, []byte(baseImage)); n != 1 {
		return nil, fmt.Errorf("%s names %q %d times, want once (the manager's container)", dir, baseImage, n)
	}
	manifest = bytes.Replace(manifest, []byte(baseImage), []byte("image: "+image), 1)
	header := fmt.Sprintf("# Multislice, everything a cluster needs (image %s).\n# Install: kubectl apply --server-side -f install.yaml\n", image)
	return append([]byte(header), manifest...), nil
}
