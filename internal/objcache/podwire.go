package objcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/client-go/rest"
)

// SlimPodWatches is rt, except that a protobuf pod watch's events reach
// the decoder already slim: each pod keeps only the fields SlimPod reads
// (podWire). A pod as the API server sends it is mostly what the cache
// throws away: of a TPU pod's 19 KB, 14.5 KB are its managed fields and
// most of the rest its containers' env and probes. The manager receives
// every pod's every status write (5 per pod in an in-place restart);
// cutting bytes costs far less than decoding them and collecting the
// garbage (bench/podwatch: 0.88x the CPU per event). Lists, other kinds
// and JSON pass untouched, and so does any event this does not recognise:
// the cache's SlimPod still makes what it keeps.
func SlimPodWatches(rt http.RoundTripper) http.RoundTripper { return slimPodWatches{rt} }

// HTTPClient is cfg's HTTP client for a cache of Options: its pod watches
// slimmed by SlimPodWatches.
func HTTPClient(cfg *rest.Config) (*http.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(SlimPodWatches)
	return rest.HTTPClientFor(cfg)
}

type slimPodWatches struct{ next http.RoundTripper }

func (s slimPodWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !isPodWatch(req) || !isProtobufStream(resp.Header.Get("Content-Type")) {
		return resp, err
	}
	resp.Body = &slimFrames{src: resp.Body}
	return resp, nil
}

// isPodWatch: a watch of all pods or of one namespace's (…/api/v1/pods,
// …/api/v1/namespaces/NS/pods), behind any path prefix of the server.
func isPodWatch(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	if w := req.URL.Query().Get("watch"); w != "true" && w != "1" {
		return false
	}
	p := strings.Split(strings.TrimSuffix(req.URL.Path, "/"), "/")
	n := len(p)
	return n >= 3 && p[n-3] == "api" && p[n-2] == "v1" && p[n-1] == "pods" ||
		n >= 5 && p[n-5] == "api" && p[n-4] == "v1" && p[n-3] == "namespaces" && p[n-1] == "pods"
}

func isProtobufStream(contentType string) bool {
	t, params, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/vnd.kubernetes.protobuf" && params["stream"] == "watch"
}

// slimFrames reads a watch stream's length-delimited frames (a 4-byte
// big-endian length, then a WatchEvent) and serves them slimmed.
type slimFrames struct {
	src      io.ReadCloser
	slim     slimmer
	in, out  []byte
	pending  []byte
	srcError error
}

func (s *slimFrames) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.srcError != nil {
			return 0, s.srcError
		}
		s.srcError = s.next()
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// next reads one frame into pending, slimmed.
func (s *slimFrames) next() error {
	var size [4]byte
	if _, err := io.ReadFull(s.src, size[:]); err != nil {
		return err // io.EOF between frames: the watch ended
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrame {
		return fmt.Errorf("watch frame of %d bytes: longer than client-go decodes (%d)", n, maxFrame)
	}
	if cap(s.in) < int(n) {
		s.in = make([]byte, n)
	}
	s.in = s.in[:n]
	if _, err := io.ReadFull(s.src, s.in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	s.out = s.slim.event(append(s.out[:0], 0, 0, 0, 0), s.in)
	binary.BigEndian.PutUint32(s.out, uint32(len(s.out)-4))
	s.pending = s.out
	return nil
}

// maxFrame is the longest watch event client-go's decoder takes
// (streaming.NewDecoder's bound): a longer length is a broken stream, not
// a reason to allocate it.
const maxFrame = 16 << 20

func (s *slimFrames) Close() error { return s.src.Close() }

// wireFields names a message's fields that are kept, by number: a nil value
// keeps the field whole, another rewrites it (a message) by its own
// fields. Fields not named are dropped.
type wireFields map[protowire.Number]*wireFields

// podWire is what SlimPod reads of a pod, by field number (k8s.io/api's
// generated.proto; numbers never change). TestSlimPodWatches checks it
// against SlimPod on pods with every field filled.
var (
	containerWire = &wireFields{1: nil, 8: nil} // name, resources
	podWire       = &wireFields{
		// metadata: name, namespace, uid, resourceVersion,
		// deletionTimestamp, labels, annotations
		1: {1: nil, 3: nil, 5: nil, 6: nil, 9: nil, 11: nil, 12: nil},
		2: {2: containerWire, 10: nil, 20: containerWire}, // spec: containers, nodeName, initContainers
		3: {1: nil, 8: nil, 10: nil},                      // status: phase, containerStatuses, initContainerStatuses
	}
)

// protoMagic starts an object in the protobuf encoding: it is followed by
// a runtime.Unknown that holds the object's kind and bytes.
var protoMagic = []byte("k8s\x00")

// slimmer slims watch events into buffers it reuses, so that a steady
// stream allocates little beyond the decoder's own.
type slimmer struct{ pod, unknown, object []byte }

// event appends to dst event (a WatchEvent: type 1, object 2 a
// RawExtension whose raw 1 is protoMagic and an Unknown: typeMeta 1, raw
// 2) with its pod slimmed by podWire; event itself if it holds no v1 Pod
// or does not parse.
func (s *slimmer) event(dst, event []byte) []byte {
	object, _ := bytesField(event, 2)
	raw, _ := bytesField(object, 1)
	if !bytes.HasPrefix(raw, protoMagic) {
		return append(dst, event...)
	}
	unknown := raw[len(protoMagic):]
	typeMeta, _ := bytesField(unknown, 1)
	apiVersion, _ := bytesField(typeMeta, 1)
	kind, _ := bytesField(typeMeta, 2)
	pod, ok := bytesField(unknown, 2)
	if !ok || string(apiVersion) != "v1" || string(kind) != "Pod" {
		return append(dst, event...)
	}
	if s.pod, ok = keep(s.pod[:0], pod, podWire); !ok {
		return append(dst, event...)
	}
	s.unknown = appendReplaced(s.unknown[:0], unknown, 2, nil, s.pod)
	s.object = appendReplaced(s.object[:0], object, 1, protoMagic, s.unknown)
	return appendReplaced(dst, event, 2, nil, s.object)
}

// keep appends to out the fields of msg that f names, rewritten as f says.
func keep(out, msg []byte, f *wireFields) ([]byte, bool) {
	parsed := true
	for fl := range eachField(msg, &parsed) {
		sub, named := (*f)[fl.num]
		switch {
		case !named:
		case sub == nil:
			out = append(out, fl.whole...)
		case fl.typ == protowire.BytesType:
			inner, ok := keep(nil, fl.value, sub)
			if !ok {
				return nil, false
			}
			out = protowire.AppendTag(out, fl.num, protowire.BytesType)
			out = protowire.AppendBytes(out, inner)
		default:
			return nil, false
		}
	}
	return out, parsed
}

// bytesField is the last value of msg's length-delimited field num (the
// last wins, as in decoding); found is false if msg does not parse.
func bytesField(msg []byte, num protowire.Number) (v []byte, found bool) {
	parsed := true
	for fl := range eachField(msg, &parsed) {
		if fl.num == num && fl.typ == protowire.BytesType {
			v, found = fl.value, true
		}
	}
	return v, found && parsed
}

// wireField is one field of a protobuf message.
type wireField struct {
	num   protowire.Number
	typ   protowire.Type
	whole []byte // its tag and value, as on the wire
	value []byte // a length-delimited field's content
}

// eachField yields msg's fields in order; *parsed is false if msg does
// not parse to its end.
func eachField(msg []byte, parsed *bool) iter.Seq[wireField] {
	return func(yield func(wireField) bool) {
		for len(msg) > 0 {
			num, typ, n := protowire.ConsumeTag(msg)
			if n < 0 {
				*parsed = false
				return
			}
			m := protowire.ConsumeFieldValue(num, typ, msg[n:])
			if m < 0 {
				*parsed = false
				return
			}
			fl := wireField{num: num, typ: typ, whole: msg[:n+m]}
			if typ == protowire.BytesType {
				fl.value, _ = protowire.ConsumeBytes(msg[n:])
			}
			if !yield(fl) {
				return
			}
			msg = msg[n+m:]
		}
	}
}

// appendReplaced appends to dst msg (which parses: bytesField found a
// field in it) with its field num one value, prefix and v.
func appendReplaced(dst, msg []byte, num protowire.Number, prefix, v []byte) []byte {
	parsed := true
	for fl := range eachField(msg, &parsed) {
		if fl.num != num {
			dst = append(dst, fl.whole...)
		}
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(len(prefix)+len(v)))
	return append(append(dst, prefix...), v...)
}
