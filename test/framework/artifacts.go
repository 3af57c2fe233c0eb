package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ArtifactsDir is where tests leave what a person reads after the fact:
// $MULTISLICE_ARTIFACTS, default _artifacts/ at the repository root.
func ArtifactsDir(t testing.TB) string {
	if d := os.Getenv("MULTISLICE_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(BinDir(t)), "_artifacts")
}

// dumped are the kinds a failed test's state dump holds, as `kubectl get -A`.
var dumped = []schema.GroupVersionResource{
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "nodes"},
	{Version: "v1", Resource: "services"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
}

// keepOnFailure registers a cleanup that, when the test has failed, copies
// the cluster's component logs and a dump of its objects and events to
// ArtifactsDir/<test name>/, so that a failure can be read after the fact.
// Registered after `down`'s cleanup, it runs before it.
func (c *Cluster) keepOnFailure() {
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		dir := filepath.Join(ArtifactsDir(c.t), regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(c.t.Name(), "_"))
		if err := c.saveArtifacts(dir); err != nil {
			c.t.Logf("artifacts: %v", err)
			return
		}
		c.t.Logf("artifacts (component logs, objects, events): %s", dir)
	})
}

func (c *Cluster) saveArtifacts(dir string) error {
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	logs, _ := filepath.Glob(filepath.Join(c.Home, "logs", "*"))
	for _, l := range append(logs, filepath.Join(c.Home, "state.json")) {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		dest := filepath.Join(dir, "logs", filepath.Base(l))
		if err := os.WriteFile(dest, data, 0o644); err != nil {
			return err
		}
	}
	if c.Config == nil {
		return nil
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, gvr := range dumped {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		var data []byte
		if err != nil {
			data = []byte(fmt.Sprintf("# list %s: %v\n", gvr.Resource, err))
		} else if data, err = yaml.Marshal(stripManagedFields(list)); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, gvr.Resource+".yaml"), data, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "events.txt"), []byte(c.eventsText(ctx)), 0o644)
}

func stripManagedFields(list *unstructured.UnstructuredList) *unstructured.UnstructuredList {
	for i := range list.Items {
		list.Items[i].SetManagedFields(nil)
	}
	return list
}

// eventsText is every event in time order, a line each, as `kubectl get
// events -A --sort-by=.lastTimestamp` prints them.
func (c *Cluster) eventsText(ctx context.Context) string {
	events, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("list events: %v\n", err)
	}
	items := events.Items
	sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	var b strings.Builder
	for _, e := range items {
		fmt.Fprintf(&b, "%s %s %s/%s %s %s x%d: %s\n", eventTime(e).Format("15:04:05.000"), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Source.Component, e.Count, e.Message)
	}
	return b.String()
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
