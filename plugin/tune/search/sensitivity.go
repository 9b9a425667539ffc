package search

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// Case is one change of the load or the model a recommendation is checked under.
type Case struct {
	Name  string
	apply func(*sim.Spec)
}

// Cases are what tune checks a recommendation's sensitivity to: more demand, slower pods.
var Cases = []Case{
	{Name: "load x1.5", apply: func(s *sim.Spec) { s.Load = Scaled(s.Load, 1.5) }},
	{Name: "load x2", apply: func(s *sim.Spec) { s.Load = Scaled(s.Load, 2) }},
	{Name: "pods twice as slow to Ready", apply: func(s *sim.Spec) {
		s.Model.PodCreateDelay *= 2
		s.Model.PodStartDelay *= 2
		s.Model.PodReadyDelay *= 2
	}},
}

// Sensitivity is each spec's scores in each case, by case then spec, played on workers
// goroutines (0: GOMAXPROCS), the time above target measured against ref's targets.
func Sensitivity(ctx context.Context, spec sim.Spec, workers int, ref *autoscalingv2.HorizontalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler) ([][]Scores, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var all []*Candidate
	for range Cases {
		for _, h := range hpas {
			all = append(all, &Candidate{HPA: h})
		}
	}
	out := make([][]Scores, len(Cases))
	// One pool per case: each case is its own spec.
	for i, c := range Cases {
		s := spec
		c.apply(&s)
		cs := all[i*len(hpas) : (i+1)*len(hpas)]
		if err := playAll(ctx, s, workers, ref, cs); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		for _, cand := range cs {
			out[i] = append(out[i], cand.Scores)
		}
	}
	return out, nil
}

// Scaled is c with every value multiplied by f.
func Scaled(c load.Curve, f float64) load.Curve {
	out := c
	out.Points = make([]load.Point, len(c.Points))
	for i, p := range c.Points {
		vals := make(map[string]float64, len(p.Values))
		for k, v := range p.Values {
			vals[k] = v * f
		}
		out.Points[i] = load.Point{At: p.At, Values: vals, Line: p.Line}
	}
	return out
}

// MergePatch is the JSON merge patch (RFC 7386) that turns from's spec into to's: only the
// fields that differ, lists whole (a merge patch replaces a list).
func MergePatch(from, to *autoscalingv2.HorizontalPodAutoscaler) (map[string]any, error) {
	a, err := asMap(from.Spec)
	if err != nil {
		return nil, err
	}
	b, err := asMap(to.Spec)
	if err != nil {
		return nil, err
	}
	d := diff(a, b)
	if len(d) == 0 {
		return nil, nil
	}
	return map[string]any{"spec": d}, nil
}

func asMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// diff is the merge patch from a to b: b's differing values, nil for a key b dropped,
// objects recursively.
func diff(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, bv := range b {
		av, ok := a[k]
		switch {
		case !ok:
			out[k] = bv
		case reflect.DeepEqual(av, bv):
		default:
			am, aIsMap := av.(map[string]any)
			bm, bIsMap := bv.(map[string]any)
			if aIsMap && bIsMap {
				out[k] = diff(am, bm)
			} else {
				out[k] = bv
			}
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out[k] = nil
		}
	}
	return out
}
