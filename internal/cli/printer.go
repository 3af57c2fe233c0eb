package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// OutputFlag adds -o to a command that prints objects: table (default),
// wide (more columns), json or yaml (camelCase, for scripts), and as kubectl
// name, jsonpath=TEMPLATE and custom-columns=NAME:.path,... (evaluated on
// what -o json prints).
func OutputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", "table", "output format: table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=NAME:.path,... (as kubectl, on what -o json prints)")
}

// Named is an item -o name can print: kubectl's <resource>.<group>/<name>.
type Named interface{ ResourceName() string }

// OrDash is s, or "-" for an empty table cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const formats = "table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=NAME:.path,..."

// CheckFormat refuses an -o that Print cannot print.
func CheckFormat(format string) error {
	switch kind, arg, _ := strings.Cut(format, "="); kind {
	case "", "table", "wide", "json", "yaml", "name":
		if arg == "" {
			return nil
		}
	case "jsonpath":
		if _, err := parseJSONPath(arg); err != nil {
			return fmt.Errorf("-o %q: %w", format, err)
		}
		return nil
	case "custom-columns":
		_, err := parseColumns(arg)
		return err
	}
	return fmt.Errorf("-o %q: use %s", format, formats)
}

// Print writes items as JSON or YAML ({"items": [...]}), through a
// jsonpath template or custom columns evaluated on that document (one item
// per row), as names (items that are Named), or as a table: header and row
// give each line's tab-separated cells (wide: more of them).
func Print[T any](out io.Writer, format string, items []T, header func(wide bool) string, row func(item T, wide bool) string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if items == nil {
		items = []T{}
	}
	kind, arg, _ := strings.Cut(format, "=")
	switch kind {
	case "json", "yaml", "jsonpath":
		return PrintObject(out, format, map[string][]T{"items": items})
	case "custom-columns":
		return printColumns(out, arg, items)
	case "name":
		for _, item := range items {
			named, ok := any(item).(Named)
			if !ok {
				return fmt.Errorf("-o name: these are not API objects; use %s", strings.Replace(formats, "name, ", "", 1))
			}
			fmt.Fprintln(out, named.ResourceName())
		}
		return nil
	}
	wide := format == "wide"
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header(wide))
	for _, item := range items {
		fmt.Fprintln(w, row(item, wide))
	}
	return w.Flush()
}

// PrintObject writes one object as YAML ("" or "yaml") or indented JSON, as
// `kubectl get -o` does, through a jsonpath template or custom columns, or
// its name when it is Named.
func PrintObject(out io.Writer, format string, obj any) error {
	kind, arg, _ := strings.Cut(format, "=")
	switch kind {
	case "jsonpath":
		p, err := parseJSONPath(arg)
		if err != nil {
			return fmt.Errorf("-o %q: %w", format, err)
		}
		doc, err := generic(obj)
		if err != nil {
			return err
		}
		if err := p.Execute(out, doc); err != nil {
			return fmt.Errorf("-o %q: %w", format, err)
		}
		return nil
	case "custom-columns":
		return printColumns(out, arg, []any{obj})
	case "name":
		if named, ok := obj.(Named); ok {
			_, err := fmt.Fprintln(out, named.ResourceName())
			return err
		}
		return fmt.Errorf("-o name: this is not an API object; use yaml, json, jsonpath=TEMPLATE or custom-columns=...")
	case "", "yaml", "json":
	default:
		return fmt.Errorf("-o %q: use yaml, json, name, jsonpath=TEMPLATE or custom-columns=NAME:.path,...", format)
	}
	data, err := json.MarshalIndent(obj, "", "  ")
	if err == nil && format != "json" {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		return err
	}
	if format == "json" {
		data = append(data, '\n')
	}
	_, err = out.Write(data)
	return err
}

// generic is obj as -o json shows it: maps, slices and scalars, which the
// jsonpath engine (client-go's, kubectl's) walks.
func generic(obj any) (any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc any
	return doc, json.Unmarshal(data, &doc)
}

func parseJSONPath(template string) (*jsonpath.JSONPath, error) {
	if template == "" {
		return nil, fmt.Errorf("the template is empty, e.g. jsonpath='{.items[*].name}'")
	}
	p := jsonpath.New("output").AllowMissingKeys(true)
	if err := p.Parse(template); err != nil {
		return nil, fmt.Errorf("bad jsonpath template: %w", err)
	}
	return p, nil
}

type column struct {
	header string
	path   *jsonpath.JSONPath
}

// relaxed accepts a column's path as kubectl does: .a.b, a.b or {.a.b}.
var relaxed = regexp.MustCompile(`^\{?\.?([^{}]+)\}?$`)

func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, fmt.Errorf("-o custom-columns: give NAME:.path pairs, e.g. custom-columns=NAME:.name,STATE:.state")
	}
	var out []column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		m := relaxed.FindStringSubmatch(path)
		if !ok || header == "" || m == nil {
			return nil, fmt.Errorf("-o custom-columns: %q is not NAME:.path (e.g. NAME:.name)", part)
		}
		p, err := parseJSONPath("{." + m[1] + "}")
		if err != nil {
			return nil, fmt.Errorf("-o custom-columns: column %s: %w", header, err)
		}
		out = append(out, column{header: header, path: p})
	}
	return out, nil
}

// printColumns prints one row per item, each cell its column's path on
// the item as -o json shows it ("<none>" when missing), as kubectl does.
func printColumns[T any](out io.Writer, spec string, items []T) error {
	cols, err := parseColumns(spec)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, item := range items {
		doc, err := generic(item)
		if err != nil {
			return err
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			results, err := c.path.FindResults(doc)
			var buf bytes.Buffer
			if err == nil && len(results) > 0 && len(results[0]) > 0 {
				err = c.path.PrintResults(&buf, results[0])
			}
			cells[i] = buf.String()
			if err != nil || cells[i] == "" {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}
