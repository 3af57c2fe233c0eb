// Package image makes the Multislice image without a container engine: the
// static multislice binary in an otherwise empty image, run as a non-root
// user, no shell. `make image` (hack/image) builds it for every platform;
// `multislice up --manager=in-cluster` builds it from the running binary.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user the manager runs as (distroless's "nonroot").
const NonRoot = 65532

// Labels are the image's OCI annotations of what it is.
type Labels struct {
	Version, Revision string
	Created           time.Time
}

// ForBinary is the manager's image: one layer (/multislice and an empty
// /tmp) with the binary at path as entrypoint, `manager` as its command.
// The binary must be static: the image has no C library.
func ForBinary(path, osName, arch string, l Labels) (v1.Image, error) {
	return ForProgram(path, Program{Name: "multislice", Cmd: []string{"manager"}, OS: osName, Arch: arch, Labels: l})
}

// Program is an image of one static binary.
type Program struct {
	// Name is the binary's file name in the image (/Name, the entrypoint);
	// Cmd its default arguments.
	Name string
	Cmd  []string
	// OS and Arch are the binary's platform.
	OS, Arch string
	Labels
}

// ForProgram is one layer, /<Name> and an empty /tmp, with the binary at
// path as entrypoint, run as the non-root user. The binary must be static.
func ForProgram(path string, p Program) (v1.Image, error) {
	osName, arch, l := p.OS, p.Arch, p.Labels
	if err := static(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		hdr  tar.Header
		body []byte
	}{
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: p.Name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}, data},
	}
	for _, e := range entries {
		e.hdr.ModTime, e.hdr.Uid, e.hdr.Gid, e.hdr.Format = l.Created, 0, 0, tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = osName, arch, v1.Time{Time: l.Created}
	cfg.Config.Entrypoint = []string{"/" + p.Name}
	cfg.Config.Cmd = p.Cmd
	cfg.Config.User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    p.Name,
		"org.opencontainers.image.version":  l.Version,
		"org.opencontainers.image.revision": l.Revision,
		"org.opencontainers.image.source":   "https://github.com/multislice/multislice",
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: l.Created})
}

// static refuses a binary that needs a dynamic loader.
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF binary: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the image has no C library; build it with CGO_ENABLED=0 (make build does)", path)
		}
	}
	return nil
}
