package rerun

import (
	"fmt"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// Demand is the demand a recording implies for one HPA (key "ns/name"; empty when the
// recording holds one HPA only), as a load curve a simulation can play with a changed spec:
// at each sync, from the recording's first sync of the HPA on, the total of each metric it
// reads: the usage summed over the pods listed (cpu in millicores, memory in bytes, a Pods
// metric's value), an Object metric's value, the sum of an External metric's values. The
// samples are what the metrics source had measured over its window before the sync, so the
// curve trails the load by that window, as run saw it. A metric unavailable at a sync keeps
// its previous value (its first one before that).
func Demand(rec *recording.Recording, key string) (load.Curve, error) {
	key, err := onlyKey(rec, key)
	if err != nil {
		return load.Curve{}, err
	}
	var (
		curve load.Curve
		start time.Time
		known = map[string]float64{}
		// gaps are the points made before a metric's first value, filled in once it comes.
		gaps = map[string][]int{}
	)
	for i := range rec.Syncs {
		s := &rec.Syncs[i]
		if s.Key != key {
			continue
		}
		if len(curve.Points) == 0 {
			start = s.Now
		} else if !s.Now.After(start.Add(curve.Points[len(curve.Points)-1].At)) {
			continue
		}
		values := map[string]float64{}
		for j, spec := range s.HPA.Spec.Metrics {
			name, ok := sim.CurveMetric(spec)
			if !ok {
				continue
			}
			if !slices.Contains(curve.Metrics, name) {
				curve.Metrics = append(curve.Metrics, name)
			}
			if j < len(s.Metrics) {
				if v, ok := total(spec, s.Metrics[j], s); ok {
					values[name] += v
					known[name] = values[name]
				}
			}
		}
		p := load.Point{At: s.Now.Sub(start), Values: map[string]float64{}, Line: s.Line}
		for _, name := range curve.Metrics {
			v, ok := values[name]
			if !ok {
				v, ok = known[name]
			}
			if !ok {
				gaps[name] = append(gaps[name], len(curve.Points))
			}
			p.Values[name] = v
		}
		for name, at := range gaps {
			if v, ok := values[name]; ok {
				for _, k := range at {
					curve.Points[k].Values[name] = v
				}
				delete(gaps, name)
			}
		}
		curve.Points = append(curve.Points, p)
	}
	if len(curve.Points) == 0 {
		return load.Curve{}, fmt.Errorf("%s: no sync of %s", rec.Name, key)
	}
	for _, name := range curve.Metrics {
		if _, ok := gaps[name]; ok {
			return load.Curve{}, fmt.Errorf("%s: metric %s of %s has no value at any sync (every read failed)", rec.Name, name, key)
		}
	}
	if len(curve.Metrics) == 0 {
		return load.Curve{}, fmt.Errorf("%s: %s reads no metric a demand curve can carry", rec.Name, key)
	}
	return curve, nil
}

// onlyKey is key, or the recording's one HPA when key is empty.
func onlyKey(rec *recording.Recording, key string) (string, error) {
	if key != "" {
		return key, nil
	}
	var keys []string
	for _, s := range rec.Syncs {
		if !slices.Contains(keys, s.Key) {
			keys = append(keys, s.Key)
		}
	}
	switch len(keys) {
	case 0:
		return "", fmt.Errorf("%s: the recording holds no sync", rec.Name)
	case 1:
		return keys[0], nil
	}
	slices.Sort(keys)
	return "", fmt.Errorf("%s: the recording holds %d HPAs (%v): name one", rec.Name, len(keys), keys)
}

// total is one metric's total at one sync in the curve's units, and false when it failed.
func total(spec autoscalingv2.MetricSpec, m recording.Metric, s *recording.Sync) (float64, bool) {
	if m.Error != nil {
		return 0, false
	}
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		return float64(m.Value) / 1000, true
	case autoscalingv2.ExternalMetricSourceType:
		var sum int64
		for _, v := range m.Values {
			sum += v
		}
		return float64(sum) / 1000, true
	}
	if m.PodSamples == nil {
		return 0, false
	}
	// Samples of pods the HPA does not select (superfluous ones) are not its load.
	listed := make(map[string]bool, len(s.Pods))
	for _, p := range s.Pods {
		listed[p.Name] = true
	}
	var sum int64
	for name, v := range m.PodSamples {
		if len(listed) == 0 || listed[name] {
			sum += v.MilliValue
		}
	}
	// cpu in millicores; memory and custom metrics in units.
	if spec.Type != autoscalingv2.PodsMetricSourceType {
		if name, _ := sim.CurveMetric(spec); name == load.CPU {
			return float64(sum), true
		}
	}
	return float64(sum) / 1000, true
}

// SimSpec is a simulation of the recorded HPA (key as for Demand) on the demand the recording
// implies: the recorded controller configuration and sync period in the default cluster model,
// the workload as the first sync saw it (its replicas, its pods' requests and labels, their
// age), and one variant "recorded", the HPA as first read. A caller adds variants (a changed
// spec) and may change the model; the recording's own decisions are Run's to reproduce.
func SimSpec(rec *recording.Recording, key string) (sim.Spec, error) {
	key, err := onlyKey(rec, key)
	if err != nil {
		return sim.Spec{}, err
	}
	curve, err := Demand(rec, key)
	if err != nil {
		return sim.Spec{}, err
	}
	var first, last *recording.Sync
	for i := range rec.Syncs {
		if s := &rec.Syncs[i]; s.Key == key {
			if first == nil {
				first = s
			}
			last = s
		}
	}
	model := sim.DefaultModel()
	model.Controller = rec.Header.Config()
	if p := rec.Header.Controller.SyncPeriod.Std(); p > 0 {
		model.SyncPeriod = p
	}
	w := sim.Workload{Name: first.HPA.Spec.ScaleTargetRef.Name}
	if first.Scale != nil {
		w.Replicas = first.Scale.SpecReplicas
	}
	var oldest time.Time
	for _, p := range first.Pods {
		if len(w.Pod.Containers) == 0 {
			w.Labels = p.Labels
			w.Pod = corev1.PodSpec{Containers: p.Spec.Containers, InitContainers: p.Spec.InitContainers, Resources: p.Spec.Resources, Overhead: p.Spec.Overhead}
		}
		if st := p.Status.StartTime; st != nil && (oldest.IsZero() || st.Time.Before(oldest)) {
			oldest = st.Time
		}
	}
	if len(w.Pod.Containers) == 0 {
		return sim.Spec{}, fmt.Errorf("%s:%d: the first sync of %s lists no pod to model the workload's on", rec.Name, first.Line, key)
	}
	if !oldest.IsZero() && first.Now.After(oldest) {
		w.Age = first.Now.Sub(oldest)
	}
	return sim.Spec{
		Model:    model,
		Load:     curve,
		Workload: w,
		Variants: []sim.Variant{{Name: "recorded", HPA: first.HPA.DeepCopy()}},
		Duration: last.Now.Sub(first.Now) + model.SyncPeriod,
		Start:    first.Now,
	}, nil
}
