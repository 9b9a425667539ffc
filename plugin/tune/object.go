package tune

import (
	"encoding/json"

	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune/search"
)

// object is the report as -o json|yaml prints it: the same figures, versioned.
func (r *report) object() (*v1alpha1.Tuning, error) {
	t := v1alpha1.NewTuning()
	h := r.in.HPA
	t.Metadata = v1alpha1.Metadata{Name: h.Name, Namespace: h.Namespace, UID: h.UID, Generation: h.Generation, ResourceVersion: h.ResourceVersion}
	t.Source = r.in.Source
	t.Objective = string(r.objective)
	if c := r.constraints; c.MaxAboveFraction >= 0 {
		t.Constraints.MaxAboveTargetFraction = ptr.To(c.MaxAboveFraction)
	}
	if c := r.constraints; c.MaxRescalesPerHour >= 0 {
		t.Constraints.MaxRescalesPerHour = ptr.To(c.MaxRescalesPerHour)
	}
	t.Constraints.Met = r.res.Met
	t.NotApplicable = r.notApplicable()
	t.Applicable = len(t.NotApplicable) == 0
	t.Keep = r.keep
	t.Search = v1alpha1.TuneSearch{Played: len(r.res.Candidates), Refused: r.res.Refused}
	// The evidence plays the current spec first, the recommended one second.
	t.Current = candidateOf(r.res.Current(), &r.evidence.Variants[0].Summary)
	t.Recommended = candidateOf(r.res.Best, &r.evidence.Variants[1].Summary)
	t.Pareto = []v1alpha1.TuneCandidate{}
	for _, c := range r.res.Pareto {
		t.Pareto = append(t.Pareto, candidateOf(c, nil))
	}
	for i, c := range search.Cases {
		t.Sensitivity = append(t.Sensitivity, v1alpha1.TuneSensitivity{Case: c.Name, Current: scoresOf(r.sens[i][0]), Recommended: scoresOf(r.sens[i][1])})
	}
	if r.patch != nil {
		js, err := json.Marshal(r.patch)
		if err != nil {
			return nil, err
		}
		t.Patch = js
	}
	a := v1alpha1.TuneAssumptions{Load: r.in.LoadName, PeriodSeconds: r.period.Seconds(), Points: len(r.in.Load.Points), Peaks: peakList(r.in.Load), Unsupported: r.problems}
	if r.in.FromPrometheus {
		n, total := loadGaps(r.in)
		a.Gaps = &v1alpha1.Gaps{StepSeconds: r.in.PromStep.Seconds(), Count: n, Seconds: total.Seconds()}
	}
	a.CounterResets = r.resets
	t.Assumptions = a
	t.Model = r.evidence.Model
	return t, nil
}

func candidateOf(c *search.Candidate, summary *v1alpha1.SimSummary) v1alpha1.TuneCandidate {
	return v1alpha1.TuneCandidate{Changes: c.Changes, Scores: scoresOf(c.Scores), Summary: summary}
}

func scoresOf(s search.Scores) v1alpha1.TuneScores {
	return v1alpha1.TuneScores{
		PodHours: s.PodHours, SecondsAboveTarget: s.AboveTarget.Seconds(), AboveTargetFraction: s.AboveFraction,
		WorstSeconds: s.Worst.Seconds(), RescalesPerHour: s.RescalesPerHour, PeakReplicas: s.PeakReplicas,
	}
}
