package placement

import (
	"maps"
	"sort"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/nodelabels"
)

// Cache is placement's picture of the cluster, kept current by the
// informers' events as Kueue's cache is: per topology key, the nodes of
// each domain, the child Jobs pinned to it and the TPU pods running on it.
// Besides, it keeps what only memory knows: the domains a decision
// reserved for Jobs not created yet, and the JobSets waiting. A decision
// reads a Snapshot of one key's domains, whose cost grows with the number
// of domains, not with the nodes, Jobs and pods of the cluster.
//
// Everything here is rebuilt from the cluster after a restart, except
// the reservations and the queue, which the JobSets' next reconciles
// rebuild.
type Cache struct {
	// GroupLabel is the node label naming a domain's multislice group.
	GroupLabel string
	// Wake is called, under the cache's lock, for each waiting JobSet
	// (namespace/name) when a domain may have become free; it must not block.
	Wake func(jobSet string)

	mu      sync.Mutex
	nodes   map[string]Node
	podsOn  map[string][]podOn                      // node -> its pods
	podNode map[string]string                       // pod -> node
	jobs    map[string]pinnedJob                    // pinned child Job (namespace/name)
	keys    map[string]*keyDomains                  // topology key -> its domains, from the first Snapshot on
	held    map[string]map[string]map[string]string // JobSet -> key -> Job name -> domain, reserved by a decision
	attempt map[string]string                       // JobSet -> the restart attempt its reservations are for
	waiting map[string]Waiter                       // by JobSet
}

// podOn is a TPU pod on a node (namespace/name) and its workload. A
// node holds one or a few, so a slice each, not a map: 5,000 maps of one
// entry were 1.5 MB of the manager's heap.
type podOn struct{ name, workload string }

// pinnedJob is an active, unsuspended child Job pinned by its node
// selector to a domain of its exclusive-topology key. It holds a domain of
// that key only: a Pathways head placed by hostname that also selects its
// CPU pool does not hold the pool.
type pinnedJob struct {
	jobSet   string    // namespace/name
	uid      types.UID // the JobSet's
	name     string
	attempt  string // the JobSet's restart attempt it was created at
	key      string // its exclusive-topology key
	selector map[string]string
}

// domain is the value of the Job's key it is pinned to.
func (j pinnedJob) domain() string { return j.selector[j.key] }

type keyDomains struct {
	byValue map[string]*domainEntry
	order   []string // sorted values; nil when a domain came or went
}

type domainEntry struct {
	nodes     map[string]Node
	pins      map[string]pinnedJob // by Job namespace/name
	occupants map[string]string    // pod -> workload
	built     *Domain              // nil when a node changed
}

// NewCache returns an empty cache.
func NewCache(groupLabel string) *Cache {
	return &Cache{GroupLabel: groupLabel, nodes: map[string]Node{}, podsOn: map[string][]podOn{},
		podNode: map[string]string{}, jobs: map[string]pinnedJob{}, keys: map[string]*keyDomains{},
		held: map[string]map[string]map[string]string{}, attempt: map[string]string{}, waiting: map[string]Waiter{}}
}

// SetNode records a node added or changed.
func (c *Cache) SetNode(n *corev1.Node) {
	node := Node{Name: n.Name, Labels: nodelabels.Of(n.Name, n.Labels), Taints: n.Spec.Taints, Healthy: gke.FitForWork(n)}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.nodes[n.Name]
	if had && old.Healthy == node.Healthy && old.Labels.Equal(node.Labels) && equalTaints(old.Taints, node.Taints) {
		return // a heartbeat: nothing placement reads changed
	}
	if had {
		c.unplaceNode(old)
	}
	c.nodes[n.Name] = node
	c.placeNode(node)
	if node.Healthy && (!had || !old.Healthy || !old.Labels.Equal(node.Labels) || !equalTaints(old.Taints, node.Taints)) {
		c.wakeWaiting() // a domain may have become fit, or suitable
	}
}

// DeleteNode forgets a node.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, had := c.nodes[name]; had {
		c.unplaceNode(old)
		delete(c.nodes, name)
	}
}

func (c *Cache) placeNode(n Node) {
	for key, kd := range c.keys {
		if v, ok := n.Labels.Get(key); ok {
			d := kd.domain(v)
			if len(d.nodes) == 0 {
				kd.order = nil // it joins the snapshot
			}
			d.nodes[n.Name], d.built = n, nil
			for _, p := range c.podsOn[n.Name] {
				d.occupants[p.name] = p.workload
			}
		}
	}
}

func (c *Cache) unplaceNode(n Node) {
	for key, kd := range c.keys {
		if d := kd.byValue[n.Labels.Value(key)]; d != nil {
			delete(d.nodes, n.Name)
			d.built = nil
			for _, p := range c.podsOn[n.Name] {
				delete(d.occupants, p.name)
			}
			kd.dropIfEmpty(n.Labels.Value(key))
		}
	}
}

// SetJob records a child Job added or changed: a Job that runs (not
// finished, not suspended) with a node selector may hold a domain.
func (c *Cache) SetJob(j *batchv1.Job) {
	name := j.Namespace + "/" + j.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.jobs[name]
	sel := j.Spec.Template.Spec.NodeSelector
	key := j.Annotations[api.ExclusiveKey]
	if j.Labels[api.JobSetNameKey] == "" || sel[key] == "" || api.JobOutcome(j) != "" || ptr.Deref(j.Spec.Suspend, false) {
		// A suspended Job (its JobSet queued or preempted by Kueue) holds
		// no domain: its pods are gone or going, and those still stopping
		// are occupants. Resumed, it is placed again.
		if had {
			c.unpin(name, old)
			delete(c.jobs, name)
			c.wakeWaiting()
		}
		return
	}
	pin := pinnedJob{jobSet: j.Namespace + "/" + j.Labels[api.JobSetNameKey], uid: types.UID(j.Labels[api.JobSetUIDKey]), name: j.Name,
		attempt: j.Labels[api.RestartsKey], key: key, selector: sel}
	if had {
		if old.key == key && maps.Equal(old.selector, sel) && old.uid == pin.uid && old.attempt == pin.attempt {
			return
		}
		c.unpin(name, old)
	}
	c.jobs[name] = pin
	if kd := c.keys[key]; kd != nil {
		kd.domain(pin.domain()).pins[name] = pin
	}
	c.follow(pin)
}

// follow moves the reservation of a Job that now exists, pinned, at the
// attempt it was reserved for, to the domain it is pinned to. A decision
// that did not see the Job (the controller's cache behind its creates for
// longer than it remembers them) could have reserved another domain for
// it, and the JobSet would hold both for as long as it runs. The
// reservation stays: once the Job fails and loses its pin, it keeps the
// domain for the JobSet until the restart places the successor.
func (c *Cache) follow(j pinnedJob) {
	jobs := c.held[j.jobSet][j.key]
	d, reserved := jobs[j.name]
	if !reserved || d == j.domain() || c.attempt[j.jobSet] != j.attempt {
		return
	}
	c.held[j.jobSet] = maps.Clone(c.held[j.jobSet]) // snapshots share the maps
	c.held[j.jobSet][j.key] = with(jobs, j.name, j.domain())
	c.wakeWaiting() // the domain reserved elsewhere is free
}

// with is a copy of jobs with job on domain.
func with(jobs map[string]string, job, domain string) map[string]string {
	out := maps.Clone(jobs)
	out[job] = domain
	return out
}

// DeleteJob forgets a Job.
func (c *Cache) DeleteJob(namespace, name string) {
	key := namespace + "/" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, had := c.jobs[key]; had {
		c.unpin(key, old)
		delete(c.jobs, key)
		c.wakeWaiting()
	}
}

func (c *Cache) unpin(name string, j pinnedJob) {
	if kd := c.keys[j.key]; kd != nil {
		if d := kd.byValue[j.domain()]; d != nil {
			delete(d.pins, name)
			kd.dropIfEmpty(j.domain())
		}
	}
}

// SetPod records a pod added or changed: a pod bound to a node that
// requests TPUs occupies it until it finishes or goes.
func (c *Cache) SetPod(p *corev1.Pod) {
	name := p.Namespace + "/" + p.Name
	if p.Spec.NodeName == "" || !gke.RequestsTPU(p.Spec) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		c.DeletePod(p.Namespace, p.Name)
		return
	}
	workload := "pod " + name
	if js := p.Labels[api.JobSetNameKey]; js != "" {
		workload = p.Namespace + "/" + js
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if node, had := c.podNode[name]; had {
		if node == p.Spec.NodeName {
			return // a pod's node and labels do not change
		}
		c.removePod(name, node)
	}
	c.podNode[name] = p.Spec.NodeName
	c.podsOn[p.Spec.NodeName] = append(c.podsOn[p.Spec.NodeName], podOn{name, workload})
	if n, known := c.nodes[p.Spec.NodeName]; known {
		for key, kd := range c.keys {
			if d := kd.byValue[n.Labels.Value(key)]; d != nil {
				d.occupants[name] = workload
			}
		}
	}
}

// DeletePod forgets a pod.
func (c *Cache) DeletePod(namespace, name string) {
	key := namespace + "/" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if node, had := c.podNode[key]; had {
		c.removePod(key, node)
		c.wakeWaiting()
	}
}

func (c *Cache) removePod(pod, node string) {
	delete(c.podNode, pod)
	on := c.podsOn[node]
	for i := range on {
		if on[i].name == pod {
			on = append(on[:i], on[i+1:]...)
			break
		}
	}
	if len(on) == 0 {
		delete(c.podsOn, node)
	} else {
		c.podsOn[node] = on
	}
	if n, known := c.nodes[node]; known {
		for key, kd := range c.keys {
			if d := kd.byValue[n.Labels.Value(key)]; d != nil {
				delete(d.occupants, pod)
			}
		}
	}
}

// Hold reserves domains for a JobSet's Jobs of restart attempt attempt
// (key -> Job name -> domain), those not created yet included; a Job that
// exists keeps the domain it is pinned to (follow). It takes the JobSet
// off the queue. A key not named keeps its reservations (a JobSet places
// its replicated jobs of different keys at different times, e.g. with
// startupPolicy InOrder). The maps are the cache's from then on: snapshots
// share them, so nobody may change them.
func (c *Cache) Hold(jobSet, attempt string, byKey map[string]map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, jobSet)
	held := maps.Clone(c.held[jobSet])
	if held == nil {
		held = map[string]map[string]string{}
	}
	maps.Copy(held, byKey)
	c.held[jobSet] = held
	c.attempt[jobSet] = attempt
	ns, _, _ := strings.Cut(jobSet, "/")
	for _, jobs := range byKey {
		for job := range jobs {
			if pin, ok := c.jobs[ns+"/"+job]; ok && pin.jobSet == jobSet {
				c.follow(pin) // seen already: the Job is where its pin says
			}
		}
	}
}

// Wait queues a JobSet that found no domains.
func (c *Cache) Wait(w Waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[w.JobSet] = w
}

// Release forgets a JobSet's reservations and its place in the queue
// (it finished, is suspended or gone); the waiting ones look again.
func (c *Cache) Release(jobSet string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, waited := c.waiting[jobSet]
	_, held := c.held[jobSet]
	delete(c.waiting, jobSet)
	delete(c.held, jobSet)
	delete(c.attempt, jobSet)
	if waited || held {
		c.wakeWaiting() // its domains are free, or those behind it move up
	}
}

// Waiting lists the JobSets waiting for domains.
func (c *Cache) Waiting() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.waiting))
	for js := range c.waiting {
		out = append(out, js)
	}
	return out
}

func (c *Cache) wakeWaiting() {
	if c.Wake == nil {
		return
	}
	for js := range c.waiting {
		c.Wake(js)
	}
}

// Snapshot is what a decision of one JobSet (namespace/name and UID) needs
// about key's domains: each domain with its nodes and holder (another
// JobSet's pinned Job, else a workload whose TPU pods run there, another's
// before the JobSet's own), every JobSet's reservations, the queue; and
// the JobSet's own pins (Job name -> domain), its Jobs being deleted
// included: a Job recreated comes back to its domain.
func (c *Cache) Snapshot(key, jobSet string, uid types.UID) (Snapshot, map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kd := c.keys[key]
	if kd == nil {
		kd = c.index(key)
	}
	if kd.order == nil {
		for v, d := range kd.byValue {
			if len(d.nodes) > 0 {
				kd.order = append(kd.order, v)
			}
		}
		sort.Strings(kd.order)
	}
	s := Snapshot{Domains: make([]Domain, 0, len(kd.order)), Held: make(map[string]map[string]string, len(c.held))}
	mine := map[string]string{}
	for _, v := range kd.order {
		d := kd.byValue[v]
		if d.built == nil {
			d.built = c.build(v, d)
		}
		out := *d.built
		for _, j := range d.pins {
			if j.uid == uid {
				mine[j.name] = v
			} else if out.Holder == "" || j.jobSet < out.Holder {
				out.Holder = j.jobSet
			}
		}
		if out.Holder == "" {
			out.Holder = occupant(d.occupants, jobSet)
		}
		s.Domains = append(s.Domains, out)
	}
	for js, byKey := range c.held {
		if jobs, ok := byKey[key]; ok {
			s.Held[js] = jobs // Hold stores maps nobody changes after
		}
	}
	for _, w := range c.waiting {
		s.Waiting = append(s.Waiting, w)
	}
	// Own Jobs pinned to a domain that has no node now keep it too.
	for _, d := range kd.byValue {
		if len(d.nodes) == 0 {
			for _, j := range d.pins {
				if j.uid == uid {
					mine[j.name] = j.domain()
				}
			}
		}
	}
	return s, mine
}

// occupant picks the workload a domain's pods belong to: another's before
// the asking JobSet's own, the first by name among several.
func occupant(occupants map[string]string, jobSet string) string {
	best := ""
	for _, w := range occupants {
		switch {
		case best == "":
			best = w
		case (best == jobSet) != (w == jobSet):
			if best == jobSet {
				best = w
			}
		case w < best:
			best = w
		}
	}
	return best
}

// index builds key's domains from everything known; the events keep them.
func (c *Cache) index(key string) *keyDomains {
	kd := &keyDomains{byValue: map[string]*domainEntry{}}
	c.keys[key] = kd
	for _, n := range c.nodes {
		if _, ok := n.Labels.Get(key); ok {
			c.placeNode(n)
		}
	}
	for name, j := range c.jobs {
		if j.key == key {
			kd.domain(j.domain()).pins[name] = j
		}
	}
	return kd
}

func (c *Cache) build(value string, d *domainEntry) *Domain {
	out := &Domain{Value: value, Nodes: make([]Node, 0, len(d.nodes))}
	for _, n := range d.nodes {
		out.Nodes = append(out.Nodes, n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	first := out.Nodes[0]
	out.Group = first.Labels.Value(c.GroupLabel)
	out.ExpectedHosts, _ = gke.SliceHosts(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: first.Labels.Map()}})
	return out
}

func (kd *keyDomains) domain(value string) *domainEntry {
	d := kd.byValue[value]
	if d == nil {
		d = &domainEntry{nodes: map[string]Node{}, pins: map[string]pinnedJob{}, occupants: map[string]string{}}
		kd.byValue[value] = d
	}
	return d
}

// dropIfEmpty forgets a domain with neither nodes nor pins; one without
// nodes leaves the snapshot.
func (kd *keyDomains) dropIfEmpty(value string) {
	d := kd.byValue[value]
	if d == nil || len(d.nodes) > 0 {
		return
	}
	kd.order = nil
	if len(d.pins) == 0 {
		delete(kd.byValue, value)
	}
}

func equalTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}
