package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// Axis is one field of the spec the search moves: its values in order (smallest or slowest
// first, so that a neighbour is one step either way), the current spec's among them.
type Axis struct {
	// Name is the field as simulate --variant names it: a metric's name (cpu), min, max,
	// scaleUp.tolerance, scaleDown.stabilizationWindowSeconds, scaleUp.policies, ...
	Name string
	// Values are the field's values as --variant takes them (60%, 120, Percent:10/60s).
	Values []string
	// Current is the index of the current spec's value (its effective value when unset).
	Current int
	set     func(h *autoscalingv2.HorizontalPodAutoscaler, i int)
}

// Kept says whether the axis holds only the current value.
func (a Axis) Kept() bool { return len(a.Values) == 1 }

// Coord is one candidate: an index into each axis' values.
type Coord []int

func (p Coord) key() string {
	var b strings.Builder
	for _, i := range p {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	return b.String()
}

// Space is the spec space around one HPA.
type Space struct {
	Base *autoscalingv2.HorizontalPodAutoscaler
	Axes []Axis
}

// Current is the point of the HPA as it is.
func (s *Space) Current() Coord {
	p := make(Coord, len(s.Axes))
	for i, a := range s.Axes {
		p[i] = a.Current
	}
	return p
}

// HPA is the base with each axis off its current value set; an axis at its current value
// leaves the field as it is (unset stays unset), so the patch holds only what changed.
func (s *Space) HPA(p Coord) *autoscalingv2.HorizontalPodAutoscaler {
	h := s.Base.DeepCopy()
	for i, a := range s.Axes {
		if p[i] != a.Current {
			a.set(h, p[i])
		}
	}
	return h
}

// Changes are the fields p changes, as --variant KEY=VALUE pairs, in the axes' order.
func (s *Space) Changes(p Coord) []string {
	var out []string
	for i, a := range s.Axes {
		if p[i] != a.Current {
			out = append(out, a.Name+"="+a.Values[p[i]])
		}
	}
	return out
}

// Keys that --keep takes besides an axis' own name and a metric's name.
const (
	KeepTargets   = "targets"
	KeepTolerance = "tolerance"
	KeepScaleUp   = "scaleUp"
	KeepScaleDown = "scaleDown"
)

// NewSpace is the space around base: each metric's target from half to one and a half times
// its value, min and max around theirs, each direction's tolerance, stabilization window,
// policies and selectPolicy. The fields keep names hold their value. cfg gives the effective
// value of an unset window and tolerance. A keep naming no field is an error.
func NewSpace(base *autoscalingv2.HorizontalPodAutoscaler, cfg replicas.Config, keep []string) (*Space, error) {
	s := &Space{Base: base.DeepCopy()}
	eff := base.DeepCopy()
	validation.Default(eff)
	if eff.Spec.Behavior == nil {
		eff.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		validation.Default(eff)
	}
	for i, m := range base.Spec.Metrics {
		if a, ok := targetAxis(base, i, m); ok {
			s.Axes = append(s.Axes, a)
		}
	}
	s.Axes = append(s.Axes, minAxis(*eff.Spec.MinReplicas, base.Spec.MaxReplicas), maxAxis(base.Spec.MaxReplicas, *eff.Spec.MinReplicas))
	for _, dir := range []string{"scaleUp", "scaleDown"} {
		r := eff.Spec.Behavior.ScaleUp
		window := []int32{0, 15, 30, 60, 120, 300}
		policies := upPolicies
		unsetWindow := int32(0)
		if dir == "scaleDown" {
			r = eff.Spec.Behavior.ScaleDown
			window = []int32{0, 30, 60, 120, 180, 300, 600, 900}
			policies = downPolicies
			unsetWindow = int32(cfg.DownscaleStabilizationWindow.Seconds())
		}
		tol := cfg.Tolerance
		if r.Tolerance != nil {
			tol = float64(r.Tolerance.MilliValue()) / 1000
		}
		s.Axes = append(s.Axes, toleranceAxis(dir, tol))
		win := unsetWindow
		if r.StabilizationWindowSeconds != nil {
			win = *r.StabilizationWindowSeconds
		}
		s.Axes = append(s.Axes, windowAxis(dir, window, win))
		s.Axes = append(s.Axes, policyAxis(dir, policies, r.Policies))
		s.Axes = append(s.Axes, selectAxis(dir, *r.SelectPolicy))
	}
	return s, s.keep(keep)
}

// keep holds each field keep names at its current value. Each name must hold a field no
// other name holds already: a name given twice, or within another (scaleUp.tolerance with
// scaleUp, the only metric with targets), is an error, as an empty or unknown one is.
func (s *Space) keep(keep []string) error {
	held := make([][]int, len(keep))
	for j, k := range keep {
		if k == "" {
			return errors.New("--keep: an empty field name (a stray comma?)")
		}
		if slices.Index(keep, k) < j {
			return fmt.Errorf("--keep %s: given twice", k)
		}
		for i, a := range s.Axes {
			dir, _, _ := strings.Cut(a.Name, ".")
			_, isTarget := metricAxis(a.Name)
			if k == a.Name || k == dir && (dir == KeepScaleUp || dir == KeepScaleDown) ||
				k == KeepTargets && isTarget || k == KeepTolerance && strings.HasSuffix(a.Name, ".tolerance") {
				held[j] = append(held[j], i)
			}
		}
		if len(held[j]) == 0 {
			var names []string
			for _, a := range s.Axes {
				names = append(names, a.Name)
			}
			return fmt.Errorf("--keep %s: no such field: give %s, %s, %s, %s or one of %s", k, KeepTargets, KeepTolerance, KeepScaleUp, KeepScaleDown, strings.Join(names, ", "))
		}
	}
	for j := range keep {
		for i := range keep {
			// Of two names holding the same fields, the later is the one said to be redundant.
			if i != j && within(held[j], held[i]) && (!within(held[i], held[j]) || i < j) {
				return fmt.Errorf("--keep %s: %s holds it already: give one of the two", keep[j], keep[i])
			}
		}
	}
	for _, axes := range held {
		for _, i := range axes {
			a := &s.Axes[i]
			a.Values, a.Current = []string{a.Values[a.Current]}, 0
		}
	}
	for _, a := range s.Axes {
		if !a.Kept() {
			return nil
		}
	}
	return fmt.Errorf("--keep %s holds every field: nothing is left to tune", strings.Join(keep, ","))
}

// within says whether every axis of a is in b.
func within(a, b []int) bool {
	for _, i := range a {
		if !slices.Contains(b, i) {
			return false
		}
	}
	return true
}

// metricAxis says whether an axis name is a metric's target (not min, max nor a rule field).
func metricAxis(name string) (string, bool) {
	if name == "min" || name == "max" || strings.HasPrefix(name, "scaleUp.") || strings.HasPrefix(name, "scaleDown.") {
		return "", false
	}
	return name, true
}

// targetFactors are the multiples of the current target the space holds.
var targetFactors = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.35, 1.5}

// targetAxis is metric i's target; false for a metric the simulator cannot name.
func targetAxis(base *autoscalingv2.HorizontalPodAutoscaler, i int, m autoscalingv2.MetricSpec) (Axis, bool) {
	name, ok := sim.CurveMetric(m)
	if !ok {
		return Axis{}, false
	}
	// Two metrics of one name (cpu of the pod and of a container) go by index, as --variant takes them.
	for j, o := range base.Spec.Metrics {
		if other, _ := sim.CurveMetric(o); j != i && other == name {
			name = strconv.Itoa(i)
		}
	}
	t := targetOf(&base.Spec.Metrics[i])
	if t == nil {
		return Axis{}, false
	}
	a := Axis{Name: name}
	switch {
	case t.AverageUtilization != nil:
		cur := *t.AverageUtilization
		vals := []int32{}
		for _, f := range targetFactors {
			vals = append(vals, max(1, int32(math.Round(float64(cur)*f))))
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		for j, v := range vals {
			a.Values = append(a.Values, fmt.Sprintf("%d%%", v))
			if v == cur {
				a.Current = j
			}
		}
		a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) {
			targetOf(&h.Spec.Metrics[i]).AverageUtilization = ptr.To(vals[k])
		}
	default:
		q := t.Value
		if t.AverageValue != nil {
			q = t.AverageValue
		}
		if q == nil {
			return Axis{}, false
		}
		cur := q.MilliValue()
		var vals []int64
		for _, f := range targetFactors {
			vals = append(vals, max(1, int64(math.Round(float64(cur)*f))))
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		format := q.Format
		for j, v := range vals {
			a.Values = append(a.Values, resource.NewMilliQuantity(v, format).String())
			if v == cur {
				a.Current = j
			}
		}
		average := t.AverageValue != nil
		a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) {
			nq := resource.NewMilliQuantity(vals[k], format)
			if average {
				targetOf(&h.Spec.Metrics[i]).AverageValue = nq
			} else {
				targetOf(&h.Spec.Metrics[i]).Value = nq
			}
		}
	}
	return a, true
}

func targetOf(m *autoscalingv2.MetricSpec) *autoscalingv2.MetricTarget {
	switch {
	case m.Resource != nil:
		return &m.Resource.Target
	case m.ContainerResource != nil:
		return &m.ContainerResource.Target
	case m.Pods != nil:
		return &m.Pods.Target
	case m.Object != nil:
		return &m.Object.Target
	case m.External != nil:
		return &m.External.Target
	}
	return nil
}

// replicaAxis is min or max over vals (the current one among them), sorted and unique.
func replicaAxis(name string, cur int32, vals []int32, set func(h *autoscalingv2.HorizontalPodAutoscaler, v int32)) Axis {
	vals = append(vals, cur)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	a := Axis{Name: name}
	for j, v := range vals {
		a.Values = append(a.Values, strconv.Itoa(int(v)))
		if v == cur {
			a.Current = j
		}
	}
	a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) { set(h, vals[k]) }
	return a
}

func minAxis(cur, maxReplicas int32) Axis {
	var vals []int32
	if cur > 0 { // scale to zero (min 0) stays as it is: only its own value is on the axis
		for _, v := range []int32{1, cur / 2, cur - 1, cur + 1, cur * 2} {
			if v >= 1 && v <= maxReplicas {
				vals = append(vals, v)
			}
		}
	}
	return replicaAxis("min", cur, vals, func(h *autoscalingv2.HorizontalPodAutoscaler, v int32) { h.Spec.MinReplicas = ptr.To(v) })
}

func maxAxis(cur, minReplicas int32) Axis {
	var vals []int32
	for _, f := range []float64{0.5, 0.75, 1.25, 1.5, 2} {
		if v := int32(math.Round(float64(cur) * f)); v >= max(1, minReplicas) {
			vals = append(vals, v)
		}
	}
	return replicaAxis("max", cur, vals, func(h *autoscalingv2.HorizontalPodAutoscaler, v int32) { h.Spec.MaxReplicas = v })
}

// rulesOf returns h's rules of one direction, creating behavior and the rules when absent:
// the API's defaults fill the fields not set, as for an HPA written so.
func rulesOf(h *autoscalingv2.HorizontalPodAutoscaler, dir string) *autoscalingv2.HPAScalingRules {
	if h.Spec.Behavior == nil {
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	p := &h.Spec.Behavior.ScaleUp
	if dir == "scaleDown" {
		p = &h.Spec.Behavior.ScaleDown
	}
	if *p == nil {
		*p = &autoscalingv2.HPAScalingRules{}
	}
	return *p
}

var tolerances = []string{"0", "0.02", "0.05", "0.1", "0.15", "0.2"}

func toleranceAxis(dir string, cur float64) Axis {
	a := Axis{Name: dir + ".tolerance", Current: -1}
	vals := slices.Clone(tolerances)
	curS := strconv.FormatFloat(cur, 'f', -1, 64)
	if !slices.Contains(vals, curS) {
		vals = append(vals, curS)
		slices.SortFunc(vals, func(x, y string) int {
			fx, _ := strconv.ParseFloat(x, 64)
			fy, _ := strconv.ParseFloat(y, 64)
			return cmpFloat(fx, fy)
		})
	}
	a.Values = vals
	a.Current = slices.Index(vals, curS)
	a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) {
		q := resource.MustParse(vals[k])
		rulesOf(h, dir).Tolerance = &q
	}
	return a
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func windowAxis(dir string, vals []int32, cur int32) Axis {
	a := replicaAxis(dir+".stabilizationWindowSeconds", cur, slices.Clone(vals), nil)
	var secs []int32
	for _, v := range a.Values {
		n, _ := strconv.Atoi(v)
		secs = append(secs, int32(n))
	}
	a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) {
		rulesOf(h, dir).StabilizationWindowSeconds = ptr.To(secs[k])
	}
	return a
}

// The policy sets the space holds per direction; the current one joins them. They are ordered
// by how many pods they let the controller add or remove in a minute from 10 replicas
// (policyRate), so that a neighbour is a little slower or faster.
var (
	upPolicies = []string{
		"Percent:50/60s", "Percent:100/60s", "Pods:4/15s", "Percent:100/15s", "Pods:4/15s;Percent:100/15s", "Percent:200/15s", "Percent:400/15s",
	}
	downPolicies = []string{
		"Pods:1/60s", "Percent:10/60s", "Percent:25/60s", "Percent:50/60s", "Percent:100/60s", "Percent:100/15s",
	}
)

// FormatPolicies writes a policy list as --variant takes it (Pods:4/15s;Percent:100/15s).
func FormatPolicies(ps []autoscalingv2.HPAScalingPolicy) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s:%d/%ds", p.Type, p.Value, p.PeriodSeconds)
	}
	return strings.Join(parts, ";")
}

// ParsePolicies reads FormatPolicies' form.
func ParsePolicies(s string) ([]autoscalingv2.HPAScalingPolicy, error) {
	var out []autoscalingv2.HPAScalingPolicy
	for _, one := range strings.Split(s, ";") {
		typ, rest, ok1 := strings.Cut(one, ":")
		value, period, ok2 := strings.Cut(rest, "/")
		n, err1 := strconv.ParseInt(value, 10, 32)
		secs, err2 := strconv.ParseInt(strings.TrimSuffix(period, "s"), 10, 32)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("policy %q: want TYPE:VALUE/PERIODs, e.g. Pods:4/15s", one)
		}
		out = append(out, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.HPAScalingPolicyType(typ), Value: int32(n), PeriodSeconds: int32(secs)})
	}
	return out, nil
}

// policyRate is how many pods a policy set lets change in a minute from 10 replicas with
// selectPolicy Max: the order of the policy axis.
func policyRate(ps []autoscalingv2.HPAScalingPolicy) float64 {
	var best float64
	for _, p := range ps {
		per := float64(p.Value)
		if p.Type == autoscalingv2.PercentScalingPolicy {
			per = 10 * float64(p.Value) / 100
		}
		if p.PeriodSeconds > 0 {
			best = max(best, per*60/float64(p.PeriodSeconds))
		}
	}
	return best
}

func policyAxis(dir string, sets []string, cur []autoscalingv2.HPAScalingPolicy) Axis {
	curS := FormatPolicies(cur)
	vals := slices.Clone(sets)
	if !slices.Contains(vals, curS) {
		vals = append(vals, curS)
	}
	parsed := map[string][]autoscalingv2.HPAScalingPolicy{}
	for _, v := range vals {
		ps, err := ParsePolicies(v)
		if err != nil {
			panic(err) // the space's own sets and FormatPolicies' output always parse
		}
		parsed[v] = ps
	}
	slices.SortStableFunc(vals, func(x, y string) int { return cmpFloat(policyRate(parsed[x]), policyRate(parsed[y])) })
	a := Axis{Name: dir + ".policies", Values: vals, Current: slices.Index(vals, curS)}
	a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) {
		rulesOf(h, dir).Policies = slices.Clone(parsed[vals[k]])
	}
	return a
}

func selectAxis(dir string, cur autoscalingv2.ScalingPolicySelect) Axis {
	// Disabled is left out: it turns a direction off, which no load justifies.
	vals := []autoscalingv2.ScalingPolicySelect{autoscalingv2.MinChangePolicySelect, autoscalingv2.MaxChangePolicySelect}
	if !slices.Contains(vals, cur) {
		vals = append([]autoscalingv2.ScalingPolicySelect{cur}, vals...)
	}
	a := Axis{Name: dir + ".selectPolicy", Current: slices.Index(vals, cur)}
	for _, v := range vals {
		a.Values = append(a.Values, string(v))
	}
	a.set = func(h *autoscalingv2.HorizontalPodAutoscaler, k int) { rulesOf(h, dir).SelectPolicy = ptr.To(vals[k]) }
	return a
}
