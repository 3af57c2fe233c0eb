package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/tpu"
	"github.com/multislice/multislice/internal/workload"
)

// xpkTypes are the multi-host TPU types of every generation GKE's users
// run today.
var xpkTypes = []string{"v4-16", "v5litepod-16", "v5p-16", "v6e-16", "tpu7x-128"}

// TestEveryXPKShapeIsAdmitted server-side dry-runs every shape xpk renders
// today, from our generator and from fixtures written from xpk's
// templates: the regular workload (with and without its flags) and
// Pathways (headless or not, elastic). Each is admitted: none is refused
// for a reason GKE does not refuse.
func TestEveryXPKShapeIsAdmitted(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	// xpk's cluster create makes its PriorityClasses; admission refuses a
	// JobSet naming one that does not exist.
	if err := install.PriorityClasses(ctx, kubernetes.NewForConfigOrDie(env.Config)); err != nil {
		t.Fatal(err)
	}
	fixture := func(name string) *template.Template {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "xpk", name))
		if err != nil {
			t.Fatal(err)
		}
		return template.Must(template.New(name).Parse(string(b)))
	}
	regular, pathways := fixture("workload.yaml.tmpl"), fixture("pathways.yaml.tmpl")
	admit := func(t *testing.T, js *api.JobSet) {
		t.Helper()
		js.Namespace = ns
		if err := env.Client.Create(ctx, js, client.DryRunAll); err != nil {
			t.Fatalf("refused: %v", err)
		}
	}
	render := func(t *testing.T, tmpl *template.Template, data any) *api.JobSet {
		t.Helper()
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, data); err != nil {
			t.Fatal(err)
		}
		var js api.JobSet
		if err := yaml.UnmarshalStrict(buf.Bytes(), &js); err != nil {
			t.Fatalf("fixture: %v\n%s", err, buf.String())
		}
		return &js
	}
	// Dynamic slicing (tpu7x), as xpk renders it: the accelerator alone
	// selected, the shape in GKE's pod annotation, no exclusive placement.
	for _, dyn := range []struct {
		typ string
		sub bool
	}{{"tpu7x-256", false}, {"tpu7x-32", true}} {
		t.Run(dyn.typ+"/dynamic slicing", func(t *testing.T) {
			shape, _ := tpu.ShapeForType(dyn.typ)
			js, err := workload.Build(workload.Spec{Name: "dyn", TPUType: dyn.typ, Slices: 2, Command: "python3 train.py", Image: "python:3.12"})
			if err != nil {
				t.Fatal(err)
			}
			delete(js.Annotations, api.ExclusiveKey)
			pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
			delete(pod.Spec.NodeSelector, gke.TopologyLabel)
			pod.Annotations = map[string]string{gke.SliceTopologyAnnotation: shape.Topology.String()}
			if dyn.sub {
				pod.Annotations[gke.PodSetRequiredTopologyAnnotation] = gke.PartitionCubeLabel
			}
			admit(t, js)
		})
	}
	for _, typ := range xpkTypes {
		shape, err := tpu.ShapeForType(typ)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(typ, "-", "")
		codes := []string{"42"}
		for c := 127; c <= 255; c++ {
			codes = append(codes, fmt.Sprint(c))
		}
		shapeData := map[string]any{"Name": name, "Accelerator": shape.Accelerator, "Topology": shape.Topology.String(),
			"Hosts": shape.Hosts, "Chips": shape.ChipsPerHost, "Slices": 2, "Queue": "multislice-queue", "TTL": 43200,
			"Priority": "medium", "ExitCodes": strings.Join(codes, ","), "InstanceType": "tpu:" + shape.Topology.String()}
		t.Run(typ+"/workload create", func(t *testing.T) {
			for _, s := range []workload.Spec{
				{Name: name, TPUType: typ, Slices: 2, Command: "python3 train.py", Image: "python:3.12"},
				{Name: name, TPUType: typ, Slices: 2, Command: "python3 train.py", Image: "python:3.12", RestartOnExitCodes: []int32{3},
					TTLSecondsAfterFinished: ptr.To(int32(600)), Priority: "high", QueueName: "multislice-queue"},
			} {
				js, err := workload.Build(s)
				if err != nil {
					t.Fatal(err)
				}
				admit(t, js)
			}
			admit(t, render(t, regular, shapeData))
		})
		for _, variant := range []struct {
			name              string
			headless          bool
			elastic, restarts int
		}{{"pathways", false, 0, 0}, {"pathways headless", true, 0, 0}, {"pathways elastic", false, 1, 2}} {
			t.Run(typ+"/"+variant.name, func(t *testing.T) {
				js, err := workload.BuildPathways(workload.PathwaysSpec{Name: name, TPUType: typ, Slices: 2, Command: "python3 train.py",
					Image: "python:3.12", Headless: variant.headless, ElasticSlices: variant.elastic, MaxSliceRestarts: variant.restarts,
					Priority: "medium", QueueName: "multislice-queue"})
				if err != nil {
					t.Fatal(err)
				}
				admit(t, js)
				data := map[string]any{"Headless": variant.headless, "Elastic": variant.elastic,
					"Backoff": shape.Hosts * max(4*boolInt(variant.elastic == 0), variant.restarts)}
				for k, v := range shapeData {
					data[k] = v
				}
				admit(t, render(t, pathways, data))
			})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
