package realhost

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The images every local cluster with real hosts serves, built from
// Debian's static busybox (this machine reaches no public registry):
// busybox itself, under docker.io's name, for pods that need a shell; and
// the pod sandbox, which holds a pod's namespaces and waits.
const (
	BusyboxRepo = "library/busybox"
	PauseRepo   = "multislice/pause"
	PauseTag    = "busybox"
	// Busybox is the static binary the images are made of (Debian's
	// busybox-static package).
	Busybox = "/usr/bin/busybox"
)

// pauseScript waits for ever and exits at once on SIGTERM or SIGINT.
const pauseScript = `trap 'exit 0' TERM INT; while :; do sleep 86400 & wait $!; done`

// LocalImages builds busybox (docker.io/library/busybox:latest) and the
// pod sandbox from Busybox: one layer with busybox and a link per applet.
func LocalImages() (map[string]v1.Image, error) {
	layer, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	base, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	withConfig := func(edit func(*v1.Config)) (v1.Image, error) {
		cf, err := base.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", runtime.GOARCH
		cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		edit(&cf.Config)
		return mutate.ConfigFile(base, cf)
	}
	busybox, err := withConfig(func(c *v1.Config) { c.Cmd = []string{"sh"} })
	if err != nil {
		return nil, err
	}
	pause, err := withConfig(func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c", pauseScript} })
	if err != nil {
		return nil, err
	}
	return map[string]v1.Image{BusyboxRepo + ":latest": busybox, PauseRepo + ":" + PauseTag: pause}, nil
}

// busyboxLayer is /bin/busybox, a link for each applet at its usual path
// (`busybox --list-full`), /etc/passwd and /etc/group with root and
// nobody, and /tmp.
func busyboxLayer() (v1.Layer, error) {
	data, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, fmt.Errorf("%w: install Debian's busybox-static (make test does; hack/apt-install.sh busybox-static 1:1.35)", err)
	}
	out, err := exec.Command(Busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", Busybox, err)
	}
	epoch := time.Unix(0, 0)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h tar.Header, body []byte) error {
		h.ModTime, h.Format = epoch, tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
	group := []byte("root:x:0:\nnobody:x:65534:\n")
	for _, d := range []string{"bin/", "sbin/", "usr/", "usr/bin/", "usr/sbin/", "etc/", "root/"} {
		if err := write(tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}, nil); err != nil {
			return nil, err
		}
	}
	if err := write(tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil); err != nil {
		return nil, err
	}
	if err := write(tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}, data); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		body []byte
	}{{"etc/passwd", passwd}, {"etc/group", group}} {
		if err := write(tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))}, f.body); err != nil {
			return nil, err
		}
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" {
			continue
		}
		if err := write(tar.Header{Name: applet, Typeflag: tar.TypeSymlink, Linkname: "/bin/busybox", Mode: 0o777}, nil); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Push writes images ("repo:tag" keys) to the registry at host:port.
func Push(ctx context.Context, registry string, images map[string]v1.Image) error {
	for ref, img := range images {
		tag, err := name.NewTag(registry+"/"+ref, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("push %s: %w", tag, err)
		}
	}
	return nil
}

// LocalName is where the local registry keeps the image pods know as ref
// ("busybox", "ghcr.io/you/trainer:v1"): its repository and tag, or
// digest, under a mirrored registry.
func LocalName(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", ref, err)
	}
	registry := r.Context().RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	mirrored := false
	for _, m := range Mirrored {
		mirrored = mirrored || m == registry
	}
	if !mirrored {
		return "", fmt.Errorf("image %q: the real hosts pull only %s names from the local registry; name it under one of them (e.g. ghcr.io/you/%s)",
			ref, strings.Join(Mirrored, ", "), r.Context().RepositoryStr())
	}
	sep := ":"
	if _, ok := r.(name.Digest); ok {
		sep = "@"
	}
	return r.Context().RepositoryStr() + sep + r.Identifier(), nil
}
