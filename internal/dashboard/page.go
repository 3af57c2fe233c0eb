// Package dashboard serves `multislice dashboard`: one live page with the
// fleet (multislice groups x node pools x hosts), every JobSet's slices x
// workers, the queue of JobSets waiting for capacity and each JobSet's
// restart timeline. The page is rendered on the server from informer
// caches and pushed to browsers as Server-Sent Events when something
// changes: watches, not polling.
package dashboard

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/view"
)

// Snapshot is what the page is drawn from.
type Snapshot struct {
	Nodes   []corev1.Node
	JobSets []api.JobSet
	Jobs    []batchv1.Job
	Pods    []corev1.Pod
	Events  []corev1.Event // regarding JobSets
	// PriorityClasses rank the queue as placement does.
	PriorityClasses []schedulingv1.PriorityClass
	// KueueWorkloads are Kueue's Workloads (v1beta2, unstructured), when
	// Kueue is served: a queued JobSet shows its admission.
	KueueWorkloads []unstructured.Unstructured
	Now            time.Time
	// GroupLabel names a node's multislice group ("": MultisliceGroup).
	GroupLabel string
}

// Page is everything the dashboard shows; /api/page serves it as JSON.
type Page struct {
	Updated   time.Time    `json:"updated"`
	Summary   Summary      `json:"summary"`
	Fleet     []view.Group `json:"fleet"`
	Queue     []Waiting    `json:"queue"`
	Workloads []Workload   `json:"workloads"`
}

// Summary is the header line.
type Summary struct {
	Nodes      int `json:"nodes"`
	ReadyNodes int `json:"readyNodes"`
	Pools      int `json:"pools"`
	SparePools int `json:"sparePools"`
	JobSets    int `json:"jobSets"`
	Waiting    int `json:"waiting"`
	Restarting int `json:"restarting"`
	Failed     int `json:"failed"`
}

// Waiting is a JobSet in the queue for capacity, in the order placement
// serves it (priority, then age): those above it are ahead of it.
type Waiting struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Priority  int32     `json:"priority"`
	Slices    int32     `json:"slices"`
	Reason    string    `json:"reason"`
	Since     time.Time `json:"since"`
}

// queue ranks the waiting JobSets as placement serves them.
func queue(waiting []*api.JobSet, classes []schedulingv1.PriorityClass) []Waiting {
	values := make(map[string]int32, len(classes))
	for _, pc := range classes {
		values[pc.Name] = pc.Value
	}
	byName := make(map[string]*api.JobSet, len(waiting))
	for _, js := range waiting {
		byName[js.Namespace+"/"+js.Name] = js
	}
	ranked := view.Rank(waiting, func(name string) (int32, bool) { v, ok := values[name]; return v, ok })
	out := make([]Waiting, len(ranked))
	for i, r := range ranked {
		w := Waiting{Namespace: r.Namespace, Name: r.Name, Priority: r.Priority, Slices: r.Slices}
		if c := meta.FindStatusCondition(byName[r.Namespace+"/"+r.Name].Status.Conditions, string(api.JobSetTopologyAssigned)); c != nil {
			w.Reason, w.Since = c.Message, c.LastTransitionTime.Time
		}
		out[i] = w
	}
	return out
}

// Workload is one JobSet: its slices x workers, conditions and timeline.
type Workload struct {
	view.JobSet
	Running  int          `json:"running"`
	Workers  int          `json:"workers"`
	Timeline []view.Entry `json:"timeline"`
}

// Build is the pure part of the dashboard.
func Build(s Snapshot) Page {
	p := Page{Updated: s.Now, Fleet: view.Fleet(s.GroupLabel, s.Nodes, s.Jobs, s.Pods)}
	for _, g := range p.Fleet {
		for _, pool := range g.Pools {
			p.Summary.Pools++
			if pool.State == view.HostSpare {
				p.Summary.SparePools++
			}
		}
	}
	for i := range s.Nodes {
		p.Summary.Nodes++
		if gke.NodeReady(&s.Nodes[i]) {
			p.Summary.ReadyNodes++
		}
	}
	type key struct{ ns, name string }
	jobs, pods, events := map[key][]batchv1.Job{}, map[key][]corev1.Pod{}, map[key][]corev1.Event{}
	for _, j := range s.Jobs {
		k := key{j.Namespace, j.Labels[api.JobSetNameKey]}
		jobs[k] = append(jobs[k], j)
	}
	for _, pod := range s.Pods {
		k := key{pod.Namespace, pod.Labels[api.JobSetNameKey]}
		pods[k] = append(pods[k], pod)
	}
	for _, e := range s.Events {
		k := key{e.InvolvedObject.Namespace, e.InvolvedObject.Name}
		events[k] = append(events[k], e)
	}
	var waiting []*api.JobSet
	for i := range s.JobSets {
		js := &s.JobSets[i]
		k := key{js.Namespace, js.Name}
		w := Workload{JobSet: view.Summarize(js, jobs[k], pods[k], events[k]), Timeline: view.Timeline(js, events[k])}
		w.Kueue = view.WorkloadOf(js, s.KueueWorkloads)
		for _, sl := range w.Slices {
			for _, wk := range sl.Workers {
				w.Workers++
				if wk.Phase == string(corev1.PodRunning) {
					w.Running++
				}
			}
		}
		p.Workloads = append(p.Workloads, w)
		p.Summary.JobSets++
		switch w.State {
		case "Waiting":
			p.Summary.Waiting++
			waiting = append(waiting, js)
		case "Restarting":
			p.Summary.Restarting++
		case api.TerminalStateFailed:
			p.Summary.Failed++
		}
	}
	p.Queue = queue(waiting, s.PriorityClasses)
	// Workloads by namespace and name.
	sort.Slice(p.Workloads, func(a, b int) bool {
		x, y := p.Workloads[a], p.Workloads[b]
		return x.Namespace < y.Namespace || (x.Namespace == y.Namespace && x.Name < y.Name)
	})
	return p
}
