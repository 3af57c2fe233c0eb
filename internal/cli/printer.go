package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// OutputFlag adds -o to a command that prints objects: table (default),
// wide (more columns), json or yaml (camelCase, for scripts).
func OutputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", "table", "output format: table, wide, json or yaml")
}

// OrDash is s, or "-" for an empty table cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CheckFormat refuses an -o that Print cannot print.
func CheckFormat(format string) error {
	switch format {
	case "", "table", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o %q: use table, wide, json or yaml", format)
}

// Print writes items as JSON or YAML ({"items": [...]}), or as a table:
// header and row give each line's tab-separated cells (wide: more of them).
func Print[T any](out io.Writer, format string, items []T, header func(wide bool) string, row func(item T, wide bool) string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if format == "json" || format == "yaml" {
		doc := map[string][]T{"items": items}
		if items == nil {
			doc["items"] = []T{}
		}
		return PrintObject(out, format, doc)
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
// `kubectl get -o` does.
func PrintObject(out io.Writer, format string, obj any) error {
	if format != "" && format != "yaml" && format != "json" {
		return fmt.Errorf("-o %q: use yaml or json", format)
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
