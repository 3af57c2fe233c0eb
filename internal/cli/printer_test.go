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
		if err := Print(&out, tc.format, items, header, row); err != nil || out.String() != tc.want {
			t.Errorf("-o %s: %v\n%q\nwant\n%q", tc.format, err, out.String(), tc.want)
		}
	}
	if err := Print(&bytes.Buffer{}, "xml", items, header, row); err == nil || !strings.Contains(err.Error(), "use table, wide, json or yaml") {
		t.Errorf("-o xml: %v", err)
	}
	var out bytes.Buffer
	if err := Print[thing](&out, "json", nil, header, row); err != nil || !strings.Contains(out.String(), `"items": []`) {
		t.Errorf("empty json: %q", out.String())
	}
}
