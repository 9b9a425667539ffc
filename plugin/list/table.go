package list

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// columns of the table, in order; NAMESPACE only with -A, METRICS only with -o wide.
var columns = []string{"NAMESPACE", "NAME", "TARGET", "MIN/MAX", "CURRENT", "WOULD BE", "METRIC", "BINDING", "HISTORY", "PROBLEMS", "METRICS"}

const unknown = "<unknown>"

// print writes the rows as a table, or the Explanations as a versioned List (-o json|yaml).
func (o *Options) print(rows []row) error {
	if o.printer != nil {
		l := output.NewList()
		for _, r := range rows {
			l.Items = append(l.Items, r.Explanation)
		}
		if err := o.printer.PrintObj(l, o.Out); err != nil {
			return fmt.Errorf("printing the list: %w", err)
		}
		return nil
	}
	w := printers.GetNewTabWriter(o.Out)
	header := o.shown(columns)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(o.shown(cells(r)), "\t"))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("printing the table: %w", err)
	}
	if o.wide {
		return o.printProblems(rows)
	}
	return nil
}

// shown keeps the columns this output shows of a full row of cells.
func (o *Options) shown(all []string) []string {
	out := all
	if !o.wide {
		out = out[:len(out)-1]
	}
	if !o.AllNamespaces {
		out = out[1:]
	}
	return out
}

// printProblems writes each finding's message under the table (-o wide).
func (o *Options) printProblems(rows []row) error {
	first := true
	for _, r := range rows {
		for _, f := range r.findings() {
			if first {
				fmt.Fprintln(o.Out)
				first = false
			}
			m := r.Explanation.Metadata
			fmt.Fprintf(o.Out, "%s/%s %s %s: %s\n", m.Namespace, m.Name, f.Severity, f.ID, f.Message)
		}
	}
	return nil
}

// cells are every column of r, in the order of columns.
func cells(r row) []string {
	e := r.Explanation
	out := []string{e.Metadata.Namespace, e.Metadata.Name, unknown, unknown, unknown, unknown, unknown, orNone(r.Binding), unknown, problems(r.findings()), unknown}
	if t := e.Target; t != nil {
		out[2] = t.Kind + "/" + t.Name
	}
	if rg := e.Replicas; rg != nil {
		out[3] = fmt.Sprintf("%d/%d", rg.Min, rg.Max)
	}
	if e.Target != nil && e.Target.SpecReplicas != nil && e.Decision != nil {
		out[4] = strconv.Itoa(int(e.Decision.CurrentReplicas))
		out[5] = strconv.Itoa(int(e.Decision.DesiredReplicas))
	}
	out[6] = drivingMetric(e)
	if h := e.History; h != nil {
		out[8] = h.Source
	}
	var all []string
	for _, m := range e.Metrics {
		all = append(all, metricCell(m))
	}
	if len(all) > 0 {
		out[10] = strings.Join(all, ", ")
	}
	return out
}

// drivingMetric is the metric whose proposal set the count, or else the first failing one.
func drivingMetric(e *output.Explanation) string {
	if i := slices.IndexFunc(e.Metrics, func(m output.Metric) bool { return m.Chosen }); i >= 0 {
		return metricCell(e.Metrics[i])
	}
	if i := slices.IndexFunc(e.Metrics, func(m output.Metric) bool { return m.Error != "" }); i >= 0 {
		return metricCell(e.Metrics[i])
	}
	if len(e.Metrics) > 0 && e.Error == nil {
		return metricCell(e.Metrics[0])
	}
	return "<none>"
}

func metricCell(m output.Metric) string {
	return fmt.Sprintf("%s %s/%s", m.Short, m.Current, m.Target)
}

// problems are the findings' IDs, worst first.
func problems(fs []output.Finding) string {
	if len(fs) == 0 {
		return "<none>"
	}
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return strings.Join(ids, ",")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// normalColumn is a --sort-by value as a column name (binding, would-be, WOULD_BE: "WOULD BE").
func normalColumn(s string) string {
	return strings.NewReplacer("-", " ", "_", " ").Replace(strings.ToUpper(strings.TrimSpace(s)))
}

// sortColumns are the columns --sort-by takes.
func sortColumns() []string { return columns[:len(columns)-1] }

// sortRows sorts by one column, stably (the rows come in namespace and name order): counts as
// numbers, PROBLEMS worst first, everything else as text.
func sortRows(rows []row, column string) {
	i := slices.Index(columns, column)
	slices.SortStableFunc(rows, func(a, b row) int {
		switch column {
		case "PROBLEMS":
			return cmp.Or(cmp.Compare(worst(a.findings()), worst(b.findings())), cmp.Compare(len(b.findings()), len(a.findings())))
		case "CURRENT", "WOULD BE":
			x, errX := strconv.Atoi(cells(a)[i])
			y, errY := strconv.Atoi(cells(b)[i])
			return cmp.Or(cmp.Compare(boolRank(errX == nil), boolRank(errY == nil)), cmp.Compare(x, y))
		}
		return cmp.Compare(cells(a)[i], cells(b)[i])
	})
}

// boolRank puts known numbers before unknown ones.
func boolRank(known bool) int {
	if known {
		return 0
	}
	return 1
}
