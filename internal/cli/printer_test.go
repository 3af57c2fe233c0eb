package cli

import (
	"bytes"
	"strings"
	"testing"
)

type thing struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func TestPrint(t *testing.T) {
	items := []thing{{"a", 1}, {"b", 2}}
	header := func(wide bool) string {
		if wide {
			return "NAME\tCOUNT\tMORE"
		}
		return "NAME\tCOUNT"
	}
	row := func(x thing, wide bool) string {
		s := x.Name + "\t" + strings.Repeat("*", x.Count)
		if wide {
			s += "\tx"
		}
		return s
	}
	for _, tc := range []struct{ format, want string }{
		{"table", "NAME  COUNT\na     *\nb     **\n"},
		{"wide", "NAME  COUNT  MORE\na     *      x\nb     **     x\n"},
		{"json", "{\n  \"items\": [\n    {\n      \"name\": \"a\",\n      \"count\": 1\n    },\n    {\n      \"name\": \"b\",\n      \"count\": 2\n    }\n  ]\n}\n"},
		{"yaml", "items:\n- count: 1\n  name: a\n- count: 2\n  name: b\n"},
	} {
		var out bytes.Buffer
		if err := Print(&out, Output{Format: tc.format}, items, header, row); err != nil || out.String() != tc.want {
			t.Errorf("-o %s: %v\n%q\nwant\n%q", tc.format, err, out.String(), tc.want)
		}
	}
	if err := Print(&bytes.Buffer{}, Output{Format: "xml"}, items, header, row); err == nil || !strings.Contains(err.Error(), "use table, wide, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns") {
		t.Errorf("-o xml: %v", err)
	}
	var out bytes.Buffer
	if err := Print[thing](&out, Output{Format: "json"}, nil, header, row); err != nil || !strings.Contains(out.String(), `"items": []`) {
		t.Errorf("empty json: %q", out.String())
	}
}

type named struct {
	Name  string            `json:"name"`
	Extra map[string]string `json:"extra,omitempty"`
}

func (n named) ResourceName() string { return "jobset.jobset.x-k8s.io/" + n.Name }

// TestKubectlFormats: -o name, jsonpath and custom-columns behave as
// kubectl's on what -o json prints.
func TestKubectlFormats(t *testing.T) {
	items := []named{{Name: "a", Extra: map[string]string{"queue": "q1"}}, {Name: "b"}}
	none := func(bool) string { return "" }
	for _, tc := range []struct {
		format, want, err string
		noHeaders         bool
	}{
		{format: "name", want: "jobset.jobset.x-k8s.io/a\njobset.jobset.x-k8s.io/b\n"},
		{format: "jsonpath={.items[*].name}", want: "a b"},
		{format: `jsonpath={range .items[*]}{.name}{"\t"}{.extra.queue}{"\n"}{end}`, want: "a\tq1\nb\t\n"},
		{format: "custom-columns=NAME:.name,QUEUE:.extra.queue", want: "NAME  QUEUE\na     q1\nb     <none>\n"},
		{format: "custom-columns=NAME:{.name}", want: "NAME\na\nb\n"},
		{format: "custom-columns=NAME:.name", noHeaders: true, want: "a\nb\n"},
		{format: `go-template={{range .items}}{{.name}}:{{.extra.queue}} {{end}}`, want: "a:q1 b:<no value> "},
		{format: "go-template={{.items", err: "bad go-template"},
		{format: "jsonpath={.items[", err: "bad jsonpath template"},
		{format: "jsonpath=", err: "the template is empty"},
		{format: "custom-columns=NAME", err: `"NAME" is not NAME:.path`},
	} {
		var out bytes.Buffer
		err := Print(&out, Output{Format: tc.format, NoHeaders: tc.noHeaders}, items, none, func(named, bool) string { return "" })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("-o %s: error %v, want %q", tc.format, err, tc.err)
			}
			continue
		}
		if err != nil || out.String() != tc.want {
			t.Errorf("-o %s: %v\n%q\nwant\n%q", tc.format, err, out.String(), tc.want)
		}
	}
	var headless bytes.Buffer
	if err := Print(&headless, Output{Format: "table", NoHeaders: true}, []thing{{"a", 1}}, func(bool) string { return "NAME" },
		func(x thing, _ bool) string { return x.Name }); err != nil || headless.String() != "a\n" {
		t.Errorf("--no-headers: %v %q", err, headless.String())
	}
	if err := Print(&bytes.Buffer{}, Output{Format: "name"}, []thing{{"a", 1}}, none, func(thing, bool) string { return "" }); err == nil || !strings.Contains(err.Error(), "not API objects") {
		t.Errorf("-o name of plain items: %v", err)
	}
	var out bytes.Buffer
	if err := PrintObject(&out, Output{Format: "jsonpath={.name}"}, named{Name: "x"}); err != nil || out.String() != "x" {
		t.Errorf("one object through jsonpath: %v %q", err, out.String())
	}
}
