package policy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Decide is the JobSet controller's whole policy as a pure function: the
// stages, in their order, over one observation, then finish. The order
// follows upstream's reconcile (reference section 2.1) and is load-bearing:
// TestStageOrder states each ordering that matters and why.
func Decide(o Observed) Plan {
	d := newDecision(o)
	for _, s := range stages {
		if s.run(d) {
			break
		}
	}
	return d.finish()
}

// A stage reads the observation and the plan so far, adds to the plan,
// and may stop the pipeline (true): later stages do not run.
type stage struct {
	name string
	run  func(*decision) (stop bool)
}

// stages is the pipeline, in order. Each is a function of its own file's
// concern with a table test of (observation, plan so far) -> plan after.
var stages = []stage{
	{"children", sortStage},
	{"finished", finishedStage},
	{"deadline", deadlineStage},
	{"hot-swapped", hotSwappedStage},
	{"restart", restartStage},
	{"success", successStage},
	{"service and claims", serviceStage},
	{"nothing to run", emptyStage},
	{"elastic scale", scaleStage},
	{"pod creation", podCreationStage},
	{"refused jobs", refusedStage},
	{"jobs", jobsStage},
	{"suspend or resume", suspendStage},
	{"scheduling", schedulingStage},
	{"placed", placedStage},
	{"slices", slicesStage},
	{"placement", placementStage},
}

// StageNames are the stages in their order, for docs/architecture.md.
func StageNames() []string {
	out := make([]string, len(stages))
	for i, s := range stages {
		out[i] = s.name
	}
	return out
}

// decision is one Decide in progress: the observation, the plan so far
// (its Status edited through e), and what earlier stages found that later
// ones read.
type decision struct {
	o         Observed
	js        *api.JobSet
	p         Plan
	e         *statusEditor
	suspended bool
	// c are the JobSet's Jobs sorted by attempt and outcome ("children").
	c children
	// deadlineLeft is what activeDeadlineSeconds leaves ("deadline"; 0: none).
	deadlineLeft time.Duration
	// startable are the replicated jobs that may start now ("jobs").
	startable map[string]bool
}

func newDecision(o Observed) *decision {
	d := &decision{o: o, js: o.JobSet, suspended: ptr.Deref(o.JobSet.Spec.Suspend, false)}
	d.p.Status = *o.JobSet.Status.DeepCopy()
	d.e = newStatusEditor(&d.p.Status, o.Now)
	return d
}

// finish settles what every exit of the pipeline shares: the events, whether
// the status changed (and whether that write waits, batchCounts), domains
// let go once finished, and the smallest requeue.
func (d *decision) finish() Plan {
	p := &d.p
	if d.deadlineLeft > 0 {
		requeue(p, d.deadlineLeft) // look again when the deadline runs out
	}
	p.Events = d.e.events
	p.StatusChanged = d.e.changed || !equality.Semantic.DeepEqual(p.Status, d.js.Status)
	if _, done := finished(&p.Status); done != nil {
		p.ReleaseDomains = true
	}
	releaseSlices(d)
	batchCounts(d.o, p)
	return *p
}
