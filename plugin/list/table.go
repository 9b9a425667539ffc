package list

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// columns of the table, in order; NAMESPACE only with -A, METRICS only with -o wide.
var columns = []string{"NAMESPACE", "NAME", "TARGET", "MIN/MAX", "CURRENT", "WOULD BE", "METRIC", "BINDING", "HELD UNTIL", "HISTORY", "CONTROLLER", "PROBLEMS", "METRICS"}

const unknown = "<unknown>"

// print writes the rows to out as a table, or the Explanations as a versioned List (-o
// json|yaml). With before (--watch: each row's changeKeys in the frame before, by
// namespace/name), a * follows every cell that changed, and the NAME of a row that is new.
func (o *Options) print(out io.Writer, rows []Row, before map[string][]string) error {
	if o.printer != nil {
		l := v1alpha1.NewList()
		for _, r := range rows {
			l.Items = append(l.Items, r.Explanation)
		}
		if err := o.printer.PrintObj(l, out); err != nil {
			return fmt.Errorf("printing the list: %w", err)
		}
		return nil
	}
	w := printers.GetNewTabWriter(out)
	header := o.shown(columns)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(o.shown(marked(r, cells(r, o.wide), before)), "\t"))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("printing the table: %w", err)
	}
	if o.wide {
		o.printProblems(out, rows)
	}
	return nil
}

// marked are r's cells with a * after those whose changeKeys differ from before's (nil: the
// first frame, or no watch), and after the NAME of a row before did not have.
func marked(r Row, cs []string, before map[string][]string) []string {
	if before == nil {
		return cs
	}
	was, ok := before[Key(r)]
	if !ok {
		cs[1] += "*"
		return cs
	}
	for i, k := range ChangeKeys(r) {
		if k != was[i] {
			cs[i] += "*"
		}
	}
	return cs
}

func Key(r Row) string {
	return r.Explanation.Metadata.Namespace + "/" + r.Explanation.Metadata.Name
}

// changeKeysByRow are the rows' changeKeys by namespace/name, for the next frame's marks.
func changeKeysByRow(rows []Row) map[string][]string {
	out := make(map[string][]string, len(rows))
	for _, r := range rows {
		out[Key(r)] = ChangeKeys(r)
	}
	return out
}

// shown keeps the columns this output shows of a full row of cells.
func (o *Options) shown(all []string) []string {
	return Shown(all, o.AllNamespaces, o.wide)
}

// Columns are the table's header: NAMESPACE only for every namespace, METRICS only wide.
func Columns(allNamespaces, wide bool) []string {
	return Shown(slices.Clone(columns), allNamespaces, wide)
}

// Shown keeps, of a full row of cells (Cells) or of anything per cell, those of
// Columns(allNamespaces, wide).
func Shown[T any](all []T, allNamespaces, wide bool) []T {
	out := all
	if !wide {
		out = out[:len(out)-1]
	}
	if !allNamespaces {
		out = out[1:]
	}
	return out
}

// printProblems writes each finding's message under the table (-o wide).
func (o *Options) printProblems(out io.Writer, rows []Row) {
	first := true
	for _, r := range rows {
		for _, f := range r.Findings() {
			if first {
				fmt.Fprintln(out)
				first = false
			}
			m := r.Explanation.Metadata
			fmt.Fprintf(out, "%s/%s %s %s: %s\n", m.Namespace, m.Name, f.Severity, f.ID, f.Message)
		}
	}
}

// cells are every column of r, in the order of columns: HELD UNTIL and CONTROLLER's times
// relative to the decision's time, every status writer with -o wide, the latest (and how many
// others) without.
func cells(r Row, wide bool) []string {
	return Cells(r, r.Explanation.Time.Time, wide)
}

// Cells are every column of r, in the order of Columns(true, true), HELD UNTIL and
// CONTROLLER's times relative to now (top counts them down between decisions).
func Cells(r Row, now time.Time, wide bool) []string {
	e := r.Explanation
	out := []string{e.Metadata.Namespace, e.Metadata.Name, unknown, unknown, unknown, unknown, unknown, orNone(r.Binding), heldCell(r, now), unknown, unknown, problems(r.Findings()), unknown}
	if t := e.Target; t != nil {
		out[2] = t.Kind + "/" + t.Name
	}
	if rg := e.Replicas; rg != nil {
		out[3] = fmt.Sprintf("%d/%d", rg.Min, rg.Max)
	}
	if e.Target != nil && e.Target.SpecReplicas != nil && e.Decision != nil {
		out[4] = strconv.Itoa(int(e.Decision.CurrentReplicas))
		out[5] = strconv.Itoa(int(e.Decision.DesiredReplicas))
		if v := e.Verdict; v != nil {
			// The counts under the memories the evidence leaves open: "6 or 8".
			for _, a := range v.Alternatives {
				out[5] += " or " + strconv.Itoa(int(a.DesiredReplicas))
			}
		}
	}
	out[6] = drivingMetric(e)
	if h := e.History; h != nil {
		out[9] = h.Source
	}
	if c := e.Cluster; c != nil {
		out[10] = controllerCell(c.StatusWriters, now, wide)
	}
	var all []string
	for _, m := range e.Metrics {
		all = append(all, metricCell(m))
	}
	if len(all) > 0 {
		out[12] = strings.Join(all, ", ")
	}
	return out
}

// ChangeKeys are what cells says, with the times absolute and CONTROLLER as its writers'
// names: what -w compares between frames (a relative time changes at every frame, a writer
// writes at every sync; neither is news).
func ChangeKeys(r Row) []string {
	out := cells(r, true)
	if v := r.Explanation.Verdict; v != nil && v.HeldUntil != nil {
		out[8] = v.HeldUntil.UTC().Format(time.RFC3339)
	}
	if c := r.Explanation.Cluster; c != nil {
		var names []string
		for _, w := range c.StatusWriters {
			names = append(names, w.Manager)
		}
		slices.Sort(names)
		out[10] = strings.Join(names, ",")
	}
	return out
}

// heldCell is when the window or policy holding the decision lets go of it ("in 3m20s"
// after now; "now" once it has).
func heldCell(r Row, now time.Time) string {
	e := r.Explanation
	switch {
	case r.heldUnknown || e.Decision == nil:
		return unknown
	case e.Verdict == nil || e.Verdict.HeldUntil == nil:
		return "<none>"
	}
	if !e.Verdict.HeldUntil.After(now) {
		return "now"
	}
	return "in " + duration.HumanDuration(e.Verdict.HeldUntil.Sub(now))
}

// controllerCell is who last wrote the HPA's status and how long before now: the latest
// writer, "+N" for the others, or every writer (wide).
func controllerCell(ws []v1alpha1.StatusWriter, now time.Time, wide bool) string {
	if len(ws) == 0 {
		return "<none>"
	}
	one := func(w v1alpha1.StatusWriter) string {
		if w.Time == nil {
			return w.Manager
		}
		return w.Manager + " " + duration.HumanDuration(now.Sub(w.Time.Time)) + " ago"
	}
	if !wide {
		if len(ws) == 1 {
			return one(ws[0])
		}
		return fmt.Sprintf("%s +%d", one(ws[0]), len(ws)-1)
	}
	all := make([]string, len(ws))
	for i, w := range ws {
		all[i] = one(w)
	}
	return strings.Join(all, ", ")
}

// drivingMetric is the metric whose proposal set the count, or else the first failing one.
func drivingMetric(e *v1alpha1.Explanation) string {
	if i := slices.IndexFunc(e.Metrics, func(m v1alpha1.Metric) bool { return m.Chosen }); i >= 0 {
		return metricCell(e.Metrics[i])
	}
	if i := slices.IndexFunc(e.Metrics, func(m v1alpha1.Metric) bool { return m.Error != "" }); i >= 0 {
		return metricCell(e.Metrics[i])
	}
	if len(e.Metrics) > 0 && e.Error == nil {
		return metricCell(e.Metrics[0])
	}
	return "<none>"
}

func metricCell(m v1alpha1.Metric) string {
	return fmt.Sprintf("%s %s/%s", m.Short, m.Current, m.Target)
}

// problems are the findings' IDs, worst first.
func problems(fs []v1alpha1.Finding) string {
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

// NormalColumn is a --sort-by value as a column name (binding, would-be, WOULD_BE: "WOULD BE").
func NormalColumn(s string) string {
	return strings.NewReplacer("-", " ", "_", " ").Replace(strings.ToUpper(strings.TrimSpace(s)))
}

// SortColumns are the columns --sort-by takes.
func SortColumns() []string { return slices.Clone(columns[:len(columns)-1]) }

// SortRows sorts by one column, stably (the rows come in namespace and name order): counts as
// numbers, HELD UNTIL soonest first, PROBLEMS worst first, everything else as text.
func SortRows(rows []Row, column string) {
	i := slices.Index(columns, column)
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch column {
		case "PROBLEMS":
			return cmp.Or(cmp.Compare(worst(a.Findings()), worst(b.Findings())), cmp.Compare(len(b.Findings()), len(a.Findings())))
		case "CURRENT", "WOULD BE":
			x, errX := leadingCount(cells(a, false)[i])
			y, errY := leadingCount(cells(b, false)[i])
			return cmp.Or(cmp.Compare(boolRank(errX == nil), boolRank(errY == nil)), cmp.Compare(x, y))
		case "HELD UNTIL":
			x, y := heldTime(a), heldTime(b)
			return cmp.Or(cmp.Compare(boolRank(!x.IsZero()), boolRank(!y.IsZero())), x.Compare(y))
		}
		return cmp.Compare(cells(a, false)[i], cells(b, false)[i])
	})
}

// heldTime is when the decision is held until, zero when not.
func heldTime(r Row) time.Time {
	if v := r.Explanation.Verdict; v != nil && v.HeldUntil != nil {
		return v.HeldUntil.Time
	}
	return time.Time{}
}

// boolRank puts known numbers before unknown ones.
func boolRank(known bool) int {
	if known {
		return 0
	}
	return 1
}

// leadingCount is a count cell's number: WOULD BE may name alternatives after it ("6 or 8").
func leadingCount(cell string) (int, error) {
	n, _, _ := strings.Cut(cell, " ")
	return strconv.Atoi(n)
}
