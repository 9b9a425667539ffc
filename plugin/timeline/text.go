package timeline

import (
	"bytes"
	"fmt"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"io"
	"strings"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// RenderText writes t for people: the period and where its past came from first (so
// that no figure is read without its source), the findings, the table of syncs, the
// rescales, then the chart of replicas and of each metric against its target, drawn as
// simulate draws a variant.
func RenderText(w io.Writer, t *v1alpha1.Timeline, o output.ChartOptions) error {
	var b bytes.Buffer
	from, to := t.From.UTC(), t.To.UTC()
	clock := timelineClock(from, to)
	writeTimelineHeader(&b, t, clock)

	b.WriteString("\nFindings:\n")
	rows := make([][]string, 0, len(t.Findings))
	for _, f := range t.Findings {
		found := "no"
		switch {
		case f.Unknown:
			found = "?"
		case f.Found:
			found = "YES"
		}
		rows = append(rows, []string{f.Type, found, f.Message})
	}
	output.Table(&b, "  ", "FINDING\tFOUND\tWHAT THE PERIOD SHOWS", rows)

	b.WriteString("\nSyncs:\n")
	rows = rows[:0]
	for _, s := range t.Syncs {
		rows = append(rows, syncRow(s, clock))
	}
	output.Table(&b, "  ", "TIME\tREPLICAS\tMETRICS\tPROPOSED\tDESIRED\tHELD BY\tRESCALE", rows)

	writeTimelineRescales(&b, t.Rescales, clock)

	if len(t.Syncs) > 0 && to.After(from) {
		b.WriteString("\n")
		output.Chart(&b, timelineVariant(t), to.Sub(from).Seconds(), o)
	}
	// The tables pad their last column; a line ends at its text.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// timelineClock is the layout of a time in the tables: the time of day when the period is
// one day's, the date too otherwise.
func timelineClock(from, to time.Time) string {
	if from.Format(time.DateOnly) == to.Format(time.DateOnly) {
		return "15:04:05"
	}
	return "01-02 15:04:05"
}

func sourceSentence(s v1alpha1.TimelineSource) string {
	switch s.Kind {
	case v1alpha1.TimelineRecording:
		return fmt.Sprintf("recording %s: every sync as kubectl hpa run made it, re-decided through the core for what held each (exact)", s.Name)
	case v1alpha1.TimelinePrometheus:
		return fmt.Sprintf("Prometheus %s: the metrics replayed through the decision core at every sync of the period (a replay, not the controller's own record)", s.Name)
	case v1alpha1.TimelineEvents:
		return fmt.Sprintf("%s: the rescales only (coarse: no sync between them is known; --prometheus-url replays every one)", s.Name)
	}
	return s.Kind + " " + s.Name
}

// replayLine says where a replay placed the syncs and read the metrics, and from what: the
// controller's syncs as its status puts them, else Prometheus' scrapes, else the epoch.
func replayLine(t *v1alpha1.Timeline) string {
	g := t.Source.Grid
	if g == nil || t.SyncPeriodSeconds <= 0 || len(t.Syncs) == 0 {
		return ""
	}
	period := time.Duration(t.SyncPeriodSeconds * float64(time.Second))
	syncs := fmt.Sprintf("syncs at %s past each %s period", time.Duration(t.Syncs[0].Time.UnixNano()%int64(period)), period)
	step := output.Seconds(g.StepSeconds)
	switch g.AlignedWith {
	case history.GridAtSyncs:
		line := syncs + ", the metrics read at each"
		if g.StepSeconds != t.SyncPeriodSeconds {
			line = fmt.Sprintf("%s, the metrics read every %s at %s past", syncs, step, output.Seconds(g.PhaseSeconds))
		}
		if ph := t.Source.SyncPhase; ph != nil {
			line += fmt.Sprintf(" (the controller syncs %s to %s past each period, from %s, written to the second)", output.Seconds(ph.FromSeconds), output.Seconds(ph.ToSeconds), ph.Anchor)
		}
		return line
	case history.GridAtScrapes:
		return fmt.Sprintf("%s (the controller's unknown), the metrics read every %s at %s past, at Prometheus' scrapes (from its scrape of %s)", syncs, step, output.Seconds(g.PhaseSeconds), strings.TrimPrefix(g.Anchor, "Prometheus' scrape of "))
	}
	return fmt.Sprintf("%s (the controller's unknown), the metrics read every %s since the epoch (Prometheus' scrapes unknown too)", syncs, step)
}

func syncRow(s v1alpha1.TimelineSync, clock string) []string {
	var metrics []string
	for _, m := range s.Metrics {
		if m.Error != "" {
			metrics = append(metrics, m.Name+" <unknown>")
			continue
		}
		metrics = append(metrics, fmt.Sprintf("%s %s vs %s", m.Name, strings.TrimSuffix(m.Current, " (avg)"), strings.TrimSuffix(m.Target, " (avg)")))
	}
	ms := strings.Join(metrics, ", ")
	if ms == "" {
		ms = "-"
	}
	rec := "-"
	if s.Recommendation != nil && *s.Recommendation >= 0 {
		rec = fmt.Sprint(*s.Recommendation)
	}
	held := s.Constraint
	if held == "" {
		held = "-"
	}
	if s.UnreadyPods > 0 {
		held += fmt.Sprintf(" (%d unready)", s.UnreadyPods)
	}
	replicas := fmt.Sprint(s.Replicas)
	if s.Replicas == v1alpha1.UnknownReplicas {
		replicas = "?"
	}
	rescale := ""
	if s.Rescale {
		rescale = fmt.Sprintf("%s -> %d", replicas, s.Desired)
	}
	if s.Observed != nil && *s.Observed != s.Replicas {
		replicas += fmt.Sprintf(" (seen %d)", *s.Observed)
	}
	return []string{s.Time.UTC().Format(clock), replicas, ms, rec, fmt.Sprint(s.Desired), held, rescale}
}

// timelineVariant is t as a simulation's variant, for the chart simulate draws: replicas after
// each sync and each metric in percent of its target.
func timelineVariant(t *v1alpha1.Timeline) v1alpha1.SimVariant {
	v := v1alpha1.SimVariant{Name: t.Metadata.Name, MinReplicas: t.MinReplicas, MaxReplicas: t.MaxReplicas}
	for _, s := range t.Syncs {
		st := v1alpha1.SimStep{AtSeconds: s.Time.Sub(t.From.Time).Seconds(), Replicas: s.Desired, Desired: s.Desired}
		if !s.Rescale {
			st.Replicas = s.Replicas
		}
		for _, m := range s.Metrics {
			if m.PercentOfTarget == nil {
				continue
			}
			if st.Utilization == nil {
				st.Utilization = map[string]float64{}
			}
			st.Utilization[m.Name] = *m.PercentOfTarget
		}
		if st.Replicas > v.Summary.PeakReplicas {
			v.Summary.PeakReplicas, v.Summary.PeakAtSeconds = st.Replicas, st.AtSeconds
		}
		v.Steps = append(v.Steps, st)
	}
	return v
}

// timelineSimulation is t as a one-variant Simulation, for the image plot draws.
func timelineSimulation(t *v1alpha1.Timeline) *v1alpha1.Simulation {
	s := v1alpha1.NewSimulation()
	s.Metadata = t.Metadata
	s.Source = t.Source.Kind
	s.Load.File = fmt.Sprintf("%s, %s to %s UTC", t.Source.Kind, t.From.UTC().Format("2006-01-02 15:04"), t.To.UTC().Format(timelineClock(t.From.UTC(), t.To.UTC())))
	s.DurationSeconds = t.To.Sub(t.From.Time).Seconds()
	s.Variants = []v1alpha1.SimVariant{timelineVariant(t)}
	return s
}

// writeTimelineHeader writes the period, its source and the spec, and how many syncs are known.
func writeTimelineHeader(b *bytes.Buffer, t *v1alpha1.Timeline, clock string) {
	from, to := t.From.UTC(), t.To.UTC()
	fmt.Fprintf(b, "Timeline of %s/%s from %s to %s UTC (%s)\n", t.Metadata.Namespace, t.Metadata.Name,
		from.Format("2006-01-02 15:04:05"), to.Format(clock), to.Sub(from).Round(time.Second))
	fmt.Fprintf(b, "Source:    %s\n", sourceSentence(t.Source))
	if line := replayLine(t); line != "" {
		fmt.Fprintf(b, "Replay:    %s\n", line)
	}
	for _, n := range t.Source.Notes {
		fmt.Fprintf(b, "           note: %s\n", n)
	}
	var targets []string
	for _, tg := range t.Targets {
		targets = append(targets, tg.Metric+" "+tg.Target)
	}
	fmt.Fprintf(b, "Spec:      min %d, max %d, %s", t.MinReplicas, t.MaxReplicas, strings.Join(targets, ", "))
	if t.SyncPeriodSeconds > 0 {
		fmt.Fprintf(b, "; a sync every %s", output.SimSeconds(t.SyncPeriodSeconds))
	}
	b.WriteString("\n")
	switch {
	case t.Source.Kind == v1alpha1.TimelineEvents:
		fmt.Fprintf(b, "Syncs:     not known between rescales: %d point(s) from events and status\n", t.SyncsKnown)
	case t.ChangesOnly:
		fmt.Fprintf(b, "Syncs:     %d, shown where something changed (%d; --all-syncs shows every one)\n", t.SyncsKnown, len(t.Syncs))
	default:
		fmt.Fprintf(b, "Syncs:     %d\n", t.SyncsKnown)
	}
}

// writeTimelineRescales writes the table of rescales, or that there were none.
func writeTimelineRescales(b *bytes.Buffer, rescales []v1alpha1.TimelineRescale, clock string) {
	b.WriteString("\nRescales:\n")
	if len(rescales) == 0 {
		b.WriteString("  none in the period\n")
	} else {
		rows := make([][]string, 0, len(rescales))
		for _, r := range rescales {
			cause := r.Cause
			if r.Constraint != "" && r.Constraint != "None" {
				cause += " (size held by " + r.Constraint + ")"
			}
			from := "?"
			if r.From != nil {
				from = fmt.Sprint(*r.From)
			}
			rows = append(rows, []string{r.Time.UTC().Format(clock), r.Direction, from, fmt.Sprint(r.To), cause})
		}
		output.Table(b, "  ", "TIME\tDIRECTION\tFROM\tTO\tCAUSE", rows)
	}
}
