// Package release renders the one-file install: config/default built with
// kustomize, with the manager's image set.
package release

import (
	"bytes"
	"fmt"
	"io/fs"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/multislice/multislice/config"
)

// baseImage is the placeholder config/manager names the image by.
const baseImage = "image: multislice:latest"

// Install builds the kustomization in dir (config/default) and returns
// install.yaml for image: apply it with `kubectl apply --server-side -f`.
func Install(dir, image string) ([]byte, error) {
	return render(filesys.MakeFsOnDisk(), dir, image)
}

// InstallEmbedded is Install from the tree the binary carries
// (config.Kustomize), for a binary run without its source.
func InstallEmbedded(image string) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(config.Kustomize, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := config.Kustomize.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile("/"+path, data)
	})
	if err != nil {
		return nil, err
	}
	return render(mem, "/default", image)
}

func render(fsys filesys.FileSystem, dir, image string) ([]byte, error) {
	if image == "" {
		return nil, fmt.Errorf("no image: name the reference your cluster pulls, e.g. IMAGE=ghcr.io/you/multislice:v0.1.0")
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // Namespace and CRD first, webhooks last, as `kustomize build`
	resources, err := krusty.MakeKustomizer(opts).Run(fsys, dir)
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
