package realhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is the local cluster's OCI registry (go-containerregistry's),
// which every real host pulls from. Blobs are kept on disk under Dir and
// every manifest pushed is recorded there too, so a registry restarted
// (by `up` after a crash) serves what was pushed before.
type Registry struct {
	Dir string

	mu      sync.Mutex
	handler http.Handler
	seq     int
}

// manifestPath matches a manifest upload: /v2/<repo>/manifests/<ref>.
var manifestPath = regexp.MustCompile(`^/v2/(.+)/manifests/([^/]+)$`)

// recorded is one manifest upload as kept on disk.
type recorded struct {
	Path        string `json:"path"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
}

// Serve serves the registry on l until ctx ends.
func (r *Registry) Serve(ctx context.Context, l net.Listener) error {
	blobs := filepath.Join(r.Dir, "blobs")
	if err := os.MkdirAll(filepath.Join(r.Dir, "manifests"), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(blobs, 0o700); err != nil {
		return err
	}
	r.handler = registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)),
		registry.Logger(log.New(io.Discard, "", 0)))
	if err := r.replay(); err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func (r *Registry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPut || !manifestPath.MatchString(req.URL.Path) {
		r.handler.ServeHTTP(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := recorded{Path: req.URL.Path, ContentType: req.Header.Get("Content-Type"), Body: body}
	req.Body = io.NopCloser(bytes.NewReader(body))
	cw := &codeWriter{ResponseWriter: w}
	r.handler.ServeHTTP(cw, req)
	if cw.code/100 == 2 {
		if err := r.record(rec); err != nil {
			log.Printf("registry: keep manifest %s: %v", rec.Path, err)
		}
	}
}

// record appends a manifest upload to the directory, numbered so that
// replay keeps the order (an index after the manifests it lists).
func (r *Registry) record(rec recorded) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%09d.json", r.seq)
	tmp := filepath.Join(r.Dir, "manifests", name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.Dir, "manifests", name))
}

// replay uploads the recorded manifests again, in order.
func (r *Registry) replay() error {
	files, err := filepath.Glob(filepath.Join(r.Dir, "manifests", "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var rec recorded
		if err := json.Unmarshal(data, &rec); err != nil {
			continue // a torn record: the push it belonged to failed
		}
		req := httptest.NewRequest(http.MethodPut, rec.Path, bytes.NewReader(rec.Body))
		req.Header.Set("Content-Type", rec.ContentType)
		resp := httptest.NewRecorder()
		r.handler.ServeHTTP(resp, req)
		if resp.Code/100 != 2 {
			return fmt.Errorf("registry: restore %s: %d %s", rec.Path, resp.Code, strings.TrimSpace(resp.Body.String()))
		}
		r.seq++
	}
	return nil
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
