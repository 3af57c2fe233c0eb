package dashboard

import (
	"bytes"
	"reflect"
	"strings"

	"github.com/multislice/multislice/internal/view"
)

// section is one part of the page that changes on its own: the summary,
// the fleet, the queue, or one JobSet.
type section struct {
	id   string
	html []byte
}

// renderer renders a page as sections, reusing the HTML of the fleet and
// of each JobSet whose data did not change since the previous page: a
// restart of one JobSet re-renders that JobSet, not 64.
type renderer struct {
	fleet     []view.Group
	fleetHTML []byte
	workloads map[string]renderedWorkload
}

type renderedWorkload struct {
	w    Workload
	html []byte
}

func (r *renderer) render(p Page) ([]section, error) {
	exec := func(name string, data any) ([]byte, error) {
		var buf bytes.Buffer
		err := tmpl.ExecuteTemplate(&buf, name, data)
		return buf.Bytes(), err
	}
	summary, err := exec("summary", p.Summary)
	if err != nil {
		return nil, err
	}
	if r.fleetHTML == nil || !reflect.DeepEqual(r.fleet, p.Fleet) {
		if r.fleetHTML, err = exec("fleet", p.Fleet); err != nil {
			return nil, err
		}
		r.fleet = p.Fleet
	}
	queue, err := exec("queue", p.Queue)
	if err != nil {
		return nil, err
	}
	out := []section{{"summary", summary}, {"fleet", r.fleetHTML}, {"queue", queue}}
	seen := map[string]renderedWorkload{}
	for _, w := range p.Workloads {
		id := "jobset/" + w.Namespace + "/" + w.Name
		prev, ok := r.workloads[id]
		if !ok || !reflect.DeepEqual(prev.w, w) {
			html, err := exec("workload", w)
			if err != nil {
				return nil, err
			}
			prev = renderedWorkload{w: w, html: html}
		}
		seen[id] = prev
		out = append(out, section{id, prev.html})
	}
	r.workloads = seen
	return out, nil
}

// assemble is the page's content: the sections in order, the JobSets in
// their own section.
func assemble(sections []section) []byte {
	var b bytes.Buffer
	jobsets := false
	for _, s := range sections {
		if !jobsets && strings.HasPrefix(s.id, "jobset/") {
			b.WriteString(`<section id="workloads"><h2>JobSets</h2>`)
			jobsets = true
		}
		b.Write(s.html)
		b.WriteByte('\n')
	}
	if !jobsets {
		b.WriteString(`<section id="workloads"><h2>JobSets</h2><p class="quiet">no JobSet</p>`)
	}
	b.WriteString("</section>\n")
	return b.Bytes()
}
