package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// Output is kubectl's -o and --no-headers for a command that prints
// objects.
type Output struct {
	// Format is table (default), wide (more columns), json or yaml
	// (camelCase, for scripts), or as kubectl name, jsonpath=,
	// jsonpath-file=, go-template=, go-template-file=, custom-columns= and
	// custom-columns-file= (evaluated on what -o json prints).
	Format string
	// NoHeaders leaves out the header line of table, wide and
	// custom-columns output.
	NoHeaders bool
}

// OutputFlag adds -o and --no-headers to cmd.
func OutputFlag(cmd *cobra.Command, o *Output) {
	cmd.Flags().StringVarP(&o.Format, "output", "o", "table", "output format: "+formats+" (as kubectl, on what -o json prints)")
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "leave out the header line (table, wide, custom-columns), as kubectl")
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

const formats = "table, wide, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=NAME:.path,... (or jsonpath-file=, go-template-file=, custom-columns-file= FILE)"

// templated are the formats cli-runtime's printers evaluate on what -o
// json prints.
var templated = map[string]bool{"jsonpath": true, "jsonpath-file": true, "go-template": true, "go-template-file": true,
	"custom-columns": true, "custom-columns-file": true}

// Check refuses an -o that Print cannot print, naming the formats.
func (o Output) Check() error {
	kind, arg, _ := strings.Cut(o.Format, "=")
	switch {
	case strings.HasPrefix(kind, "custom-columns"):
		_, err := o.columns()
		return err
	case templated[kind]:
		_, err := o.printer()
		return err
	case kind == "" || kind == "table" || kind == "wide" || kind == "json" || kind == "yaml" || kind == "name":
		if arg == "" {
			return nil
		}
	}
	return fmt.Errorf("-o %q: use %s", o.Format, formats)
}

// template is the format's kind and template, read from its file for the
// -file kinds.
func (o Output) template() (kind, arg string, err error) {
	kind, arg, _ = strings.Cut(o.Format, "=")
	if strings.HasSuffix(kind, "-file") {
		data, err := os.ReadFile(arg)
		if err != nil {
			return "", "", fmt.Errorf("-o %s: %w", kind, err)
		}
		arg = strings.TrimSpace(string(data))
		kind = strings.TrimSuffix(kind, "-file")
	}
	return kind, arg, nil
}

// printer is the cli-runtime printer of a jsonpath or go-template format.
func (o Output) printer() (printers.ResourcePrinter, error) {
	kind, arg, err := o.template()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(arg) == "" {
		return nil, fmt.Errorf("-o %s: the template is empty, e.g. jsonpath='{.items[*].name}', go-template='{{range .items}}{{.name}} {{end}}' or custom-columns=NAME:.name", kind)
	}
	switch kind {
	case "jsonpath":
		p, err := printers.NewJSONPathPrinter(arg)
		if err != nil {
			return nil, fmt.Errorf("-o %q: bad jsonpath template: %w", o.Format, err)
		}
		p.AllowMissingKeys(true)
		return p, nil
	case "go-template":
		p, err := printers.NewGoTemplatePrinter([]byte(arg))
		if err != nil {
			return nil, fmt.Errorf("-o %q: bad go-template: %w", o.Format, err)
		}
		p.AllowMissingKeys(true)
		return p, nil
	}
	return nil, fmt.Errorf("-o %q: use %s", o.Format, formats)
}

// Print writes items as JSON or YAML ({"items": [...]}), through a
// template or custom columns evaluated on that document (custom columns:
// one row per item), as names (items that are Named), or as a table:
// header and row give each line's tab-separated cells (wide: more).
func Print[T any](out io.Writer, o Output, items []T, header func(wide bool) string, row func(item T, wide bool) string) error {
	if err := o.Check(); err != nil {
		return err
	}
	if items == nil {
		items = []T{}
	}
	kind, _, _ := strings.Cut(o.Format, "=")
	switch {
	case strings.HasPrefix(kind, "custom-columns"):
		return printColumns(out, o, items)
	case kind == "json" || kind == "yaml" || templated[kind]:
		return PrintObject(out, o, map[string][]T{"items": items})
	case kind == "name":
		for _, item := range items {
			named, ok := any(item).(Named)
			if !ok {
				return fmt.Errorf("-o name: these are not API objects; use %s", strings.Replace(formats, "name, ", "", 1))
			}
			fmt.Fprintln(out, named.ResourceName())
		}
		return nil
	}
	wide := kind == "wide"
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !o.NoHeaders {
		fmt.Fprintln(w, header(wide))
	}
	for _, item := range items {
		fmt.Fprintln(w, row(item, wide))
	}
	return w.Flush()
}

// PrintObject writes one object as YAML ("" or "yaml") or indented JSON, as
// `kubectl get -o` does, through a template or custom columns, or its name
// when it is Named.
func PrintObject(out io.Writer, o Output, obj any) error {
	kind, _, _ := strings.Cut(o.Format, "=")
	switch {
	case strings.HasPrefix(kind, "custom-columns"):
		return printColumns(out, o, []any{obj})
	case templated[kind]:
		doc, err := generic(obj)
		if err != nil {
			return err
		}
		return printTemplated(out, o, &unstructured.Unstructured{Object: doc})
	case kind == "name":
		if named, ok := obj.(Named); ok {
			_, err := fmt.Fprintln(out, named.ResourceName())
			return err
		}
		return fmt.Errorf("-o name: this is not an API object; use yaml, json, jsonpath=, go-template= or custom-columns=")
	case kind == "" || kind == "yaml" || kind == "json":
	default:
		return fmt.Errorf("-o %q: use yaml, json, name, jsonpath=, go-template= or custom-columns=", o.Format)
	}
	data, err := json.MarshalIndent(obj, "", "  ")
	if err == nil && kind != "json" {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		return err
	}
	if kind == "json" {
		data = append(data, '\n')
	}
	_, err = out.Write(data)
	return err
}

// printTemplated prints obj through the format's cli-runtime printer.
func printTemplated(out io.Writer, o Output, obj *unstructured.Unstructured) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := p.PrintObj(obj, &buf); err != nil {
		return fmt.Errorf("-o %q: %w", o.Format, err)
	}
	_, err = out.Write(buf.Bytes())
	return err
}

// generic is obj as -o json shows it: maps, slices and scalars, which the
// templates walk.
func generic(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, json.Unmarshal(data, &doc)
}

type column struct {
	header string
	path   *jsonpath.JSONPath
}

// relaxed accepts a column's path as kubectl does: .a.b, a.b or {.a.b}.
var relaxed = regexp.MustCompile(`^\{?\.?([^{}]+)\}?$`)

// columns parses custom-columns=NAME:.path,... as kubectl does (its
// printer lives in k8s.io/kubectl, which this project does not carry).
func (o Output) columns() ([]column, error) {
	_, spec, err := o.template()
	if err != nil {
		return nil, err
	}
	if spec == "" {
		return nil, fmt.Errorf("-o custom-columns: give NAME:.path pairs, e.g. custom-columns=NAME:.name,STATE:.state")
	}
	var out []column
	for _, part := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' }) {
		header, path, ok := strings.Cut(strings.TrimSpace(part), ":")
		m := relaxed.FindStringSubmatch(path)
		if !ok || header == "" || m == nil {
			return nil, fmt.Errorf("-o custom-columns: %q is not NAME:.path (e.g. NAME:.name)", part)
		}
		p := jsonpath.New(header).AllowMissingKeys(true)
		if err := p.Parse("{." + m[1] + "}"); err != nil {
			return nil, fmt.Errorf("-o custom-columns: column %s: bad jsonpath template: %w", header, err)
		}
		out = append(out, column{header: header, path: p})
	}
	return out, nil
}

// printColumns prints one row per item, each cell its column's path on
// the item as -o json shows it ("<none>" when missing), as kubectl does.
func printColumns[T any](out io.Writer, o Output, items []T) error {
	cols, err := o.columns()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !o.NoHeaders {
		headers := make([]string, len(cols))
		for i, c := range cols {
			headers[i] = c.header
		}
		fmt.Fprintln(w, strings.Join(headers, "\t"))
	}
	for _, item := range items {
		doc, err := generic(item)
		if err != nil {
			return err
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			var cell bytes.Buffer
			if err := c.path.Execute(&cell, doc); err != nil || cell.Len() == 0 {
				cells[i] = "<none>"
				continue
			}
			cells[i] = cell.String()
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}
