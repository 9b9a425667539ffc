package tune

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/simulate"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune/search"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// maxGapShare is the share of the period a load's gaps may cover before the recommendation
// is said not to be supported by it.
const maxGapShare = 0.1

// report is what tune prints.
type report struct {
	in          *simulate.Input
	period      time.Duration
	res         *search.Result
	objective   search.Objective
	constraints search.Constraints
	keep        []string
	sens        [][]search.Scores
	patch       map[string]any
	evidence    *v1alpha1.Simulation
	width       int
	// problems are why the load cannot support the recommendation (dataProblems).
	problems []string
	// apply says --apply writes the patch once the report is printed.
	apply bool
	// resets counts the resets of the pods' CPU usage counters in Prometheus over the period
	// (nil: not read: the load is not from Prometheus, or the HPA reads no cpu).
	resets *int
}

func (r *report) render(w io.Writer) error {
	var b bytes.Buffer
	h := r.in.HPA
	fmt.Fprintf(&b, "Tuning %s/%s (%s) on %s: %s\n", h.Namespace, h.Name, r.in.Source, r.in.LoadName, describeLoad(r.in.Load, r.period))
	fmt.Fprintf(&b, "Objective: %s; %s; %s\n", r.objective, r.constraintWords(), keptWords(r.keep))
	fmt.Fprintf(&b, "Searched:  %d specs played on the same load and model (a coarse grid, then one field one step at a time around the best)", len(r.res.Candidates))
	if r.res.Refused > 0 {
		fmt.Fprintf(&b, ", %d more the API server would refuse", r.res.Refused)
	}
	b.WriteString("\n\n")

	r.pareto(&b)
	r.recommendation(&b)
	r.sensitivity(&b)
	if err := r.patchSection(&b); err != nil {
		return err
	}
	r.caveats(&b)

	b.WriteString("\nEvidence: the current and tuned specs on the same load, as kubectl hpa simulate plays them\n\n")
	if err := simulate.RenderText(&b, r.evidence, output.ChartOptions{Width: r.width}); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (r *report) constraintWords() string {
	c := r.constraints
	above := "no limit on the time above target"
	if c.MaxAboveFraction >= 0 {
		above = fmt.Sprintf("at most %s of the period above target", percent(c.MaxAboveFraction))
	}
	churn := "no limit on rescales"
	if c.MaxRescalesPerHour >= 0 {
		churn = fmt.Sprintf("at most %g rescales an hour", c.MaxRescalesPerHour)
	}
	return above + ", " + churn
}

// playedWords are the specs played, with the fields --keep held: a constraint no spec met
// may be one the kept fields keep from being met.
func (r *report) playedWords() string {
	if len(r.keep) == 0 {
		return "spec played"
	}
	return "spec played with " + strings.Join(r.keep, ", ") + " kept"
}

func keptWords(keep []string) string {
	if len(keep) == 0 {
		return "every field free"
	}
	return "kept: " + strings.Join(keep, ", ")
}

func percent(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f*100), "0"), ".") + "%"
}

// scoreCells are a candidate's figures as table cells.
func scoreCells(s search.Scores) []string {
	return []string{
		fmt.Sprintf("%.2f", s.PodHours), fmt.Sprintf("%s (%s)", dur(s.AboveTarget), percent(s.AboveFraction)),
		dur(s.Worst), fmt.Sprintf("%.1f", s.RescalesPerHour), fmt.Sprint(s.PeakReplicas),
	}
}

const scoreHeader = "POD-HOURS\tABOVE TARGET\tWORST\tRESCALES/H\tPEAK"

func dur(d time.Duration) string { return d.Round(time.Second).String() }

func changes(c *search.Candidate) string {
	if len(c.Changes) == 0 {
		return "the HPA as it is"
	}
	return strings.Join(c.Changes, ", ")
}

func (r *report) pareto(b *bytes.Buffer) {
	b.WriteString("Pareto front: no other spec played has fewer pod-hours, less time above target and fewer rescales at once (cheapest first; * the recommendation):\n")
	cur := r.res.Current()
	var rows [][]string
	onFront := false
	for _, c := range r.res.Pareto {
		mark := ""
		if c == r.res.Best {
			mark = "*"
		}
		if c == cur {
			onFront = true
		}
		rows = append(rows, append(append([]string{mark}, scoreCells(c.Scores)...), changes(c)))
	}
	output.Table(b, " ", "\t"+scoreHeader+"\tCHANGES", rows)
	if onFront {
		b.WriteString("  The current spec is on the front: no spec played beats it on all three.\n\n")
		return
	}
	fmt.Fprintf(b, "  The current spec (%s pod-hours, %s above target, %.1f rescales an hour) is not on the front: %d specs played beat it on all three.\n\n",
		fmt.Sprintf("%.2f", cur.Scores.PodHours), dur(cur.Scores.AboveTarget), cur.Scores.RescalesPerHour, r.res.DominatedBy(cur))
}

func (r *report) recommendation(b *bytes.Buffer) {
	best, cur := r.res.Best, r.res.Current()
	fmt.Fprintf(b, "Recommendation (objective %s): %s\n", r.objective, changes(best))
	switch {
	case !r.res.Met:
		fmt.Fprintf(b, "  NO %s meets the constraints (%s): this is the closest, not a safe spec.", r.playedWords(), r.constraintWords())
		if len(r.keep) > 0 {
			fmt.Fprintf(b, " Without --keep %s tune searches those fields too.", strings.Join(r.keep, ","))
		}
		b.WriteString("\n")
		if len(r.problems) > 0 {
			fmt.Fprintf(b, "  Nor can the load support it: %s.\n", strings.Join(r.problems, "; "))
		}
	case len(r.problems) > 0:
		fmt.Fprintf(b, "  It meets the constraints on this load, but the load cannot support it: %s.\n", strings.Join(r.problems, "; "))
	default:
		fmt.Fprintf(b, "  It meets the constraints (%s) on this load.\n", r.constraintWords())
	}
	b.WriteString("  The API server would accept it (validated as kube-apiserver v1.37 validates an HPA).\n")
	rows := [][]string{
		append([]string{"current"}, scoreCells(cur.Scores)...),
		append([]string{"tuned"}, scoreCells(best.Scores)...),
	}
	output.Table(b, "  ", "SPEC\t"+scoreHeader, rows)
	b.WriteString("\n")
}

func (r *report) sensitivity(b *bytes.Buffer) {
	b.WriteString("Sensitivity: the current and tuned specs when the load or the pods differ from what was tuned on:\n")
	var rows [][]string
	for i, c := range search.Cases {
		for j, name := range []string{"current", "tuned"} {
			rows = append(rows, append([]string{c.Name, name}, scoreCells(r.sens[i][j])...))
		}
	}
	output.Table(b, "  ", "CASE\tSPEC\t"+scoreHeader, rows)
	b.WriteString("\n")
}

func (r *report) patchSection(b *bytes.Buffer) error {
	if r.patch == nil {
		b.WriteString("Patch: none: the HPA as it is is the recommendation.\n")
		return nil
	}
	js, err := json.Marshal(r.patch)
	if err != nil {
		return err
	}
	y, err := sigsyaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	// A patch of a spec not to apply says so before the command that would apply it.
	what := "Patch"
	switch {
	case !r.res.Met:
		what = "Patch of the closest spec, not one to apply"
	case len(r.problems) > 0:
		what = "Patch of a spec the load cannot support, not one to apply"
	}
	if r.apply {
		fmt.Fprintf(b, "%s (a JSON merge patch; --apply writes it below, or says why not):\n", what)
	} else {
		fmt.Fprintf(b, "%s (a JSON merge patch; nothing was written):\n", what)
	}
	for _, line := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	h := r.in.HPA
	fmt.Fprintf(b, "  kubectl patch hpa %s -n %s --type merge -p '%s'\n", h.Name, h.Namespace, js)
	fmt.Fprintf(b, "  To play it yourself: kubectl hpa simulate with the same inputs and --variant 'tuned=%s'\n", strings.Join(r.res.Best.Changes, ","))
	return nil
}

// dataProblems are the reasons the load cannot support a recommendation.
func (r *report) dataProblems() []string {
	var out []string
	longest := max(longestWindow(r.in.HPA, r.in), longestWindow(r.res.Best.HPA, r.in))
	if r.period < longest {
		out = append(out, fmt.Sprintf("its period (%s) is shorter than the longest window or policy period of the specs compared (%s)", r.period, longest))
	}
	if gaps, total := loadGaps(r.in); total > time.Duration(maxGapShare*float64(r.period)) {
		out = append(out, fmt.Sprintf("its gaps (%d, %s in all) cover more than %s of the period", gaps, total, percent(maxGapShare)))
	}
	return out
}

func (r *report) caveats(b *bytes.Buffer) {
	b.WriteString("\nWhat the recommendation rests on:\n")
	fmt.Fprintf(b, "  - The load: a recommendation is as good as the load it was tuned on: %s of %s, %s. A day or a peak not in it is not in the recommendation (see Sensitivity).\n",
		r.period, r.in.LoadName, peaks(r.in.Load))
	if r.in.FromPrometheus {
		gaps, total := loadGaps(r.in)
		if gaps == 0 {
			fmt.Fprintf(b, "  - Gaps: none (Prometheus' points every %s).\n", r.in.PromStep)
		} else {
			fmt.Fprintf(b, "  - Gaps: %d, %s in all, where Prometheus had no point for a metric (every %s otherwise): the load is a straight line across them.\n", gaps, total, r.in.PromStep)
		}
	} else {
		b.WriteString("  - Gaps: the load is given as it is (a file or a recording): between its points it holds or moves in a straight line.\n")
	}
	switch {
	case r.resets == nil:
	case *r.resets == 0:
		b.WriteString("  - Counter resets: none in the pods' CPU usage counters (no container restarted in the period).\n")
	default:
		fmt.Fprintf(b, "  - Counter resets: %d in the pods' CPU usage counters (containers restarted): the load counts across them, but the demand a container did not serve while it was down is not in it.\n", *r.resets)
	}
	for _, p := range r.problems {
		fmt.Fprintf(b, "  - Not supported: %s.\n", p)
	}
	b.WriteString("  - The model: every figure is the simulator's, under the Model below (its parameters, each with where its value comes from).\n")
}

// describeLoad is the load's period and points.
func describeLoad(c load.Curve, period time.Duration) string {
	return fmt.Sprintf("%s, %d points (%s), peak %s", period, len(c.Points), strings.Join(c.Metrics, ", "), peaks(c))
}

// peaks is each metric's highest demand and when.
func peaks(c load.Curve) string {
	var parts []string
	for _, p := range peakList(c) {
		parts = append(parts, fmt.Sprintf("%s %s at %s", p.Metric, p.Value, time.Duration(p.AtSeconds*float64(time.Second))))
	}
	return strings.Join(parts, ", ")
}

// peakList is each metric's highest demand and when.
func peakList(c load.Curve) []v1alpha1.Peak {
	var out []v1alpha1.Peak
	for _, m := range c.Metrics {
		var top float64
		var at time.Duration
		for i, p := range c.Points {
			if v := p.Values[m]; i == 0 || v > top {
				top, at = v, p.At
			}
		}
		out = append(out, v1alpha1.Peak{Metric: m, Value: quantity(m, top), AtSeconds: at.Seconds()})
	}
	return out
}

func quantity(metric string, v float64) string {
	switch metric {
	case load.CPU:
		return resource.NewMilliQuantity(int64(v), resource.DecimalSI).String()
	case load.Memory:
		return resource.NewQuantity(int64(v), resource.BinarySI).String()
	}
	return fmt.Sprintf("%g", v)
}

// loadGaps counts the intervals between a Prometheus load's points longer than two steps.
func loadGaps(in *simulate.Input) (n int, total time.Duration) {
	if !in.FromPrometheus || in.PromStep <= 0 {
		return 0, 0
	}
	pts := in.Load.Points
	for i := 1; i < len(pts); i++ {
		if d := pts[i].At - pts[i-1].At; d > 2*in.PromStep {
			n++
			total += d - in.PromStep
		}
	}
	return n, total
}

// longestWindow is the longest stabilization window or policy period of h, as the
// controller applies them (an unset scale-down window is the controller's).
func longestWindow(h *autoscalingv2.HorizontalPodAutoscaler, in *simulate.Input) time.Duration {
	d := h.DeepCopy()
	if d.Spec.Behavior == nil {
		d.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	validation.Default(d)
	longest := time.Duration(0)
	for _, r := range []*autoscalingv2.HPAScalingRules{d.Spec.Behavior.ScaleUp, d.Spec.Behavior.ScaleDown} {
		if r.StabilizationWindowSeconds != nil {
			longest = max(longest, time.Duration(*r.StabilizationWindowSeconds)*time.Second)
		}
		for _, p := range r.Policies {
			longest = max(longest, time.Duration(p.PeriodSeconds)*time.Second)
		}
	}
	if d.Spec.Behavior.ScaleDown.StabilizationWindowSeconds == nil {
		longest = max(longest, in.Model.Controller.DownscaleStabilizationWindow)
	}
	return longest
}
