// Package image implements `multislice image load`: an image into the
// local cluster's registry, where its real hosts pull from.
package image

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/cobra"

	"github.com/multislice/multislice/internal/cli"
	msimage "github.com/multislice/multislice/internal/image"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/realhost"
)

// NewCmdImage is `multislice image`.
func NewCmdImage(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Images for the local cluster's real hosts",
	}
	cmd.AddCommand(NewCmdLoad(f, nil))
	return cmd
}

// LoadOptions is what `image load` was asked.
type LoadOptions struct {
	F *cli.Factory
	// Path is the binary, OCI layout or tarball; Ref the name pods use.
	Path, Ref string
	// Args are a binary's image's default arguments.
	Args []string
}

// NewCmdLoad is `image load`; runF (nil: loadRun) gets the options.
func NewCmdLoad(f *cli.Factory, runF func(context.Context, *LoadOptions) error) *cobra.Command {
	o := &LoadOptions{F: f}
	if runF == nil {
		runF = loadRun
	}
	cmd := &cobra.Command{
		Use:   "load PATH NAME",
		Short: "Put an image into the local cluster's registry, as NAME (e.g. ghcr.io/you/trainer:v1)",
		Long: `Put an image into the registry the local cluster's real hosts pull from, under the name
pods use (docker.io, registry.k8s.io and ghcr.io names are served from it). PATH is one of:
  a static binary    made into an image of that one file, its entrypoint (--arg adds default arguments)
  an OCI layout      a directory, e.g. dist/oci from make image (its image for this machine's platform)
  a docker tarball   e.g. dist/multislice-linux-amd64.tar`,
		Example: `  CGO_ENABLED=0 go build -o /tmp/trainer ./examples/trainer
  multislice image load /tmp/trainer ghcr.io/multislice/trainer:dev`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, pos []string) error {
			o.Path, o.Ref = pos[0], pos[1]
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringArrayVar(&o.Args, "arg", nil, "default argument of a binary's image (repeat for several)")
	return cmd
}

// loadRun pushes the image to the local cluster's registry.
func loadRun(ctx context.Context, o *LoadOptions) error {
	repo, err := realhost.LocalName(o.Ref)
	if err != nil {
		return err
	}
	home, err := localcluster.At(o.F.Home())
	if err != nil {
		return err
	}
	info, err := home.RealHosts()
	if err != nil {
		return err
	}
	if info == nil {
		return fmt.Errorf("the cluster in %s has no real hosts, so no registry: start one with `multislice up --fleet examples/fleet-real.yaml`", home)
	}
	img, err := read(o.Path, o.Args)
	if err != nil {
		return err
	}
	if err := realhost.Push(ctx, info.Registry, map[string]v1.Image{repo: img}); err != nil {
		return err
	}
	digest, _ := img.Digest()
	fmt.Fprintf(o.F.Out, "loaded %s (%s) into the local registry %s\n", o.Ref, digest, info.Registry)
	return nil
}

// read makes the image at path: a directory is an OCI layout, an ELF file
// a static binary, anything else a docker tarball.
func read(path string, args []string) (v1.Image, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return fromLayout(path)
	}
	if f, err := elf.Open(path); err == nil {
		f.Close()
		return msimage.ForProgram(path, msimage.Program{Name: filepath.Base(path), Cmd: args, OS: "linux", Arch: runtime.GOARCH,
			Labels: msimage.Labels{Version: "local", Created: time.Unix(0, 0).UTC()}})
	}
	return tarball.ImageFromPath(path, nil)
}

// fromLayout is the layout's image for this machine's platform.
func fromLayout(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: not an OCI layout: %w", dir, err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	return forThisPlatform(index)
}

// forThisPlatform finds the linux/GOARCH image in an index, looking into
// nested indexes (make image's layout holds one multi-platform index).
func forThisPlatform(index v1.ImageIndex) (v1.Image, error) {
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range manifest.Manifests {
		if d.MediaType.IsIndex() {
			inner, err := index.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			if img, err := forThisPlatform(inner); err == nil {
				return img, nil
			}
			continue
		}
		if d.Platform == nil || (d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH) {
			return index.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no linux/%s image", runtime.GOARCH)
}
