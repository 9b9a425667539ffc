package simulate

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// RenderText writes s for people: the model first (so that no figure is read
// without its assumptions), the workload and the variants, the summary table, then for each
// variant a chart of replicas and of each metric against its target over time.
func RenderText(w io.Writer, s *v1alpha1.Simulation, o output.ChartOptions) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Simulation of %s/%s (%s) under %s for %s\n\n", s.Metadata.Namespace, s.Metadata.Name, s.Source, s.Load.File, output.SimSeconds(s.DurationSeconds))

	b.WriteString("Model:\n")
	rows := make([][]string, 0, len(s.Model))
	for _, p := range s.Model {
		rows = append(rows, []string{p.Name, p.Value, p.Source})
	}
	output.Table(&b, "  ", "PARAMETER\tVALUE\tSOURCE", rows)

	wl := s.Workload
	fmt.Fprintf(&b, "\nWorkload:  %s, %d replicas at the start", targetName(wl), wl.Replicas)
	if len(wl.Requests) > 0 {
		keys := slices.Sorted(maps.Keys(wl.Requests))
		var reqs []string
		for _, k := range keys {
			reqs = append(reqs, k+"="+wl.Requests[k])
		}
		fmt.Fprintf(&b, ", requests per pod %s", strings.Join(reqs, ","))
	}
	fmt.Fprintf(&b, "\nLoad:      %s (%s; %d points, %s)\n\n", s.Load.File, strings.Join(s.Load.Metrics, ", "), s.Load.Points, s.Load.Interpolation)

	b.WriteString("Variants:\n")
	rows = rows[:0]
	for _, v := range s.Variants {
		changes := "the HPA as it is"
		if len(v.Changes) > 0 {
			changes = strings.Join(v.Changes, ", ")
		}
		var targets []string
		for _, t := range v.Targets {
			targets = append(targets, t.Metric+" "+t.Target)
		}
		rows = append(rows, []string{v.Name, fmt.Sprintf("%d-%d", v.MinReplicas, v.MaxReplicas), strings.Join(targets, ", "), changes})
	}
	output.Table(&b, "  ", "NAME\tMIN-MAX\tTARGETS\tCHANGES", rows)

	b.WriteString("\nSummary:\n")
	rows = rows[:0]
	for _, v := range s.Variants {
		sm := v.Summary
		rows = append(rows, []string{
			v.Name, fmt.Sprint(sm.PeakReplicas), output.SimSeconds(sm.PeakAtSeconds), fmt.Sprintf("%.2f", sm.PodSeconds/3600),
			output.SimSeconds(sm.SecondsAboveTarget), fmt.Sprintf("%d/%d", sm.ScaleUps, sm.ScaleDowns), heldBackBy(sm.HeldBackBy),
		})
	}
	output.Table(&b, "  ", "VARIANT\tPEAK\tAT\tPOD-HOURS\tABOVE TARGET\tUP/DOWN\tHELD BACK BY", rows)

	for _, v := range s.Variants {
		b.WriteString("\n")
		output.Chart(&b, v, s.DurationSeconds, o)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func targetName(w v1alpha1.SimWorkload) string {
	if w.Kind == "" {
		return "the workload"
	}
	return w.Kind + "/" + w.Name
}

// heldBackBy lists the constraints by how many syncs each held, most first.
func heldBackBy(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
