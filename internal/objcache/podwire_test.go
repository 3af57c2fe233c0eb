package objcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/randfill"
)

// randomPod is a pod with every field filled at random, as valid as the
// protobuf encoding needs.
func randomPod(f *randfill.Filler) *corev1.Pod {
	var p corev1.Pod
	f.Fill(&p)
	var value string
	// The labels and annotations SlimPod keeps, which random keys miss.
	for _, k := range podLabels {
		f.Fill(&value)
		metav1.SetMetaDataLabel(&p.ObjectMeta, k, value)
	}
	for _, k := range podAnnotations {
		f.Fill(&value)
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, k, value)
	}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "tpu-last"})
	last := &p.Spec.Containers[len(p.Spec.Containers)-1]
	last.Resources.Requests = corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}
	return &p
}

// tpuPod is a TPU pod as the API server sent it to the manager (a
// 16-host slice's worker, from bench/restart).
func tpuPod(t testing.TB) *corev1.Pod {
	raw, err := os.ReadFile("testdata/tpu-pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.1).NumElements(1, 3).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<31), 0) },
		func(t **metav1.Time, c randfill.Continue) {
			if c.Bool() {
				v := metav1.Unix(c.Int63n(1<<31), 0)
				*t = &v
			}
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(1<<31), 0))
		},
		func(v *intstr.IntOrString, c randfill.Continue) { *v = intstr.FromInt32(c.Int31()) },
		func(r *runtime.RawExtension, c randfill.Continue) { r.Raw = []byte(`{}`) },
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(fmt.Sprintf(`{"f:%d":{}}`, c.Int63())) },
	)
}

// watchServer serves a protobuf watch of pods: events, then the end.
func watchServer(t *testing.T, events []watch.Event) *httptest.Server {
	codecs := serializer.NewCodecFactory(Scheme())
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	objects := codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		frames := info.StreamSerializer.Framer.NewFrameWriter(w)
		for _, e := range events {
			raw, err := runtime.Encode(objects, e.Object)
			if err != nil {
				t.Errorf("encode: %v", err)
				return
			}
			var buf bytes.Buffer
			if err := info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, &buf); err != nil {
				t.Errorf("encode event: %v", err)
				return
			}
			_, _ = frames.Write(buf.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// received is what a client-go pod watch through SlimPodWatches decodes
// of events.
func received(t *testing.T, events []watch.Event) []watch.Event {
	srv := watchServer(t, events)
	cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf},
		WrapTransport: SlimPodWatches}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []watch.Event
	for e := range w.ResultChan() {
		got = append(got, e)
	}
	return got
}

func TestSlimPodWatches(t *testing.T) {
	events := []watch.Event{{Type: watch.Modified, Object: tpuPod(t)}}
	want := []*corev1.Pod{tpuPod(t)}
	for seed := int64(0); seed < 200; seed++ {
		p := randomPod(filler(seed))
		events = append(events, watch.Event{Type: watch.Modified, Object: p})
		want = append(want, p)
	}
	got := received(t, events)
	if len(got) != len(events) {
		t.Fatalf("got %d events, want %d", len(got), len(events))
	}
	for i, e := range got {
		pod, ok := e.Object.(*corev1.Pod)
		if !ok || e.Type != watch.Modified {
			t.Fatalf("event %d: %s %T, want MODIFIED *v1.Pod", i, e.Type, e.Object)
		}
		slimGot, _ := SlimPod(pod)
		slimWant, _ := SlimPod(want[i])
		if !apiequality.Semantic.DeepEqual(PodOf(slimGot), PodOf(slimWant)) {
			t.Fatalf("pod %d: what the cache keeps differs:\n got %+v\nwant %+v", i, slimGot, slimWant)
		}
		if len(pod.ManagedFields) > 0 || len(pod.Spec.Volumes) > 0 {
			t.Fatalf("pod %d: not slimmed: %d managed fields, %d volumes", i, len(pod.ManagedFields), len(pod.Spec.Volumes))
		}
	}
}

func TestSlimPodWatchesPassesTheRest(t *testing.T) {
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	got := received(t, []watch.Event{{Type: watch.Bookmark, Object: bookmark}, {Type: watch.Error, Object: status}})
	if len(got) != 2 {
		t.Fatalf("got %d events, want 2", len(got))
	}
	if p, ok := got[0].Object.(*corev1.Pod); !ok || got[0].Type != watch.Bookmark || p.ResourceVersion != "42" ||
		p.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark: got %s %+v", got[0].Type, got[0].Object)
	}
	if s, ok := got[1].Object.(*metav1.Status); !ok || got[1].Type != watch.Error || s.Code != 410 || s.Message != status.Message {
		t.Errorf("error event: got %s %+v", got[1].Type, got[1].Object)
	}
}

func TestSlimPodEventLeavesWhatItCannotRead(t *testing.T) {
	for _, event := range [][]byte{nil, {0xff}, {0x12, 0x05, 0x0a, 0x03, 'k', '8', 's'}, []byte("not protobuf at all")} {
		if got := (&slimmer{}).event(nil, event); !bytes.Equal(got, event) {
			t.Errorf("event(%q) = %q, want it unchanged", event, got)
		}
	}
}

func TestSlimFramesRefusesAnOverlongFrame(t *testing.T) {
	frames := &slimFrames{src: io.NopCloser(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}))}
	if _, err := frames.Read(make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "longer than client-go decodes") {
		t.Errorf("a 4 GiB frame: %v, want refused", err)
	}
}

func TestIsPodWatch(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        bool
	}{
		{"GET", "https://h/api/v1/pods?watch=true", true},
		{"GET", "https://h/api/v1/namespaces/default/pods?watch=1&resourceVersion=5", true},
		{"GET", "https://h/prefix/api/v1/pods?watch=true", true},
		{"GET", "https://h/api/v1/pods", false},
		{"GET", "https://h/api/v1/namespaces/default/pods/p1?watch=true", false},
		{"GET", "https://h/api/v1/nodes?watch=true", false},
		{"GET", "https://h/apis/batch/v1/jobs?watch=true", false},
		{"POST", "https://h/api/v1/namespaces/default/pods?watch=true", false},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		if got := isPodWatch(req); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.url, got, tc.want)
		}
	}
}

func BenchmarkPodWatchEvent(b *testing.B) {
	p := tpuPod(b)
	codecs := serializer.NewCodecFactory(Scheme())
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	raw, _ := runtime.Encode(codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), p)
	event, _ := (&metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: raw}}).Marshal()
	decode := func(ev []byte) {
		var we metav1.WatchEvent
		_ = we.Unmarshal(ev)
		_, _, _ = codecs.UniversalDeserializer().Decode(we.Object.Raw, nil, &corev1.Pod{})
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			decode(event)
		}
	})
	b.Run("slimmed", func(b *testing.B) {
		var s slimmer
		var out []byte
		for b.Loop() {
			out = s.event(out[:0], event)
			decode(out)
		}
	})
}
