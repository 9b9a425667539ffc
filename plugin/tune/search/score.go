package search

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
)

// Scores are one spec's figures on a load.
type Scores struct {
	// PodHours is the cost: pods existing (any phase) integrated over the period.
	PodHours float64
	// AboveTarget is the risk: time the demand per Ready pod was above a metric's target;
	// AboveFraction the share of the period it is; Worst the longest unbroken stretch.
	AboveTarget   time.Duration
	AboveFraction float64
	Worst         time.Duration
	// RescalesPerHour is the churn: scale writes (up and down) per hour of the period.
	RescalesPerHour float64
	Rescales        int
	PeakReplicas    int32
}

// ScoresOf are a simulated variant's scores over a period of d.
func ScoresOf(s sim.Summary, d time.Duration) Scores {
	hours := d.Hours()
	n := s.ScaleUps + s.ScaleDowns
	return Scores{
		PodHours:        s.PodSeconds / 3600,
		AboveTarget:     seconds(s.SecondsAboveTarget),
		AboveFraction:   s.SecondsAboveTarget / d.Seconds(),
		Worst:           seconds(s.LongestAboveTarget),
		RescalesPerHour: float64(n) / hours,
		Rescales:        n,
		PeakReplicas:    s.PeakReplicas,
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

// dominates says a is at least as good as b on cost, risk and churn, and better on one.
func (a Scores) dominates(b Scores) bool {
	le := a.PodHours <= b.PodHours && a.AboveTarget <= b.AboveTarget && a.RescalesPerHour <= b.RescalesPerHour
	lt := a.PodHours < b.PodHours || a.AboveTarget < b.AboveTarget || a.RescalesPerHour < b.RescalesPerHour
	return le && lt
}

// Objective is what the recommendation minimizes among the specs that meet the constraints.
type Objective string

const (
	// Cost is the fewest pod-hours (then the least time above target, then the least churn).
	Cost Objective = "cost"
	// Risk is the least time above target (then the shortest worst stretch, then pod-hours).
	Risk Objective = "risk"
	// Balanced is the least sum of cost, risk and churn, each relative to the current spec's
	// (floors: 1% of the period above target, one rescale an hour), so that halving the
	// pod-hours weighs as much as halving the time above target.
	Balanced Objective = "balanced"
)

// Objectives are the objectives in the order help lists them.
var Objectives = []Objective{Cost, Risk, Balanced}

// ParseObjective reads --objective.
func ParseObjective(s string) (Objective, error) {
	for _, o := range Objectives {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("--objective %q: want cost, risk or balanced", s)
}

// Constraints bound the specs a recommendation may be; a negative bound is none.
type Constraints struct {
	// MaxAboveFraction is --max-above-target: the largest share of the period above target.
	MaxAboveFraction float64
	// MaxRescalesPerHour is --max-rescales-per-hour.
	MaxRescalesPerHour float64
}

// NoConstraints bounds nothing.
var NoConstraints = Constraints{MaxAboveFraction: -1, MaxRescalesPerHour: -1}

// excess is how far s is outside c, as a sum of relative overshoots (0 when s meets c).
func (c Constraints) excess(s Scores) float64 {
	var e float64
	if c.MaxAboveFraction >= 0 && s.AboveFraction > c.MaxAboveFraction {
		e += (s.AboveFraction - c.MaxAboveFraction) / max(c.MaxAboveFraction, 0.001)
	}
	if c.MaxRescalesPerHour >= 0 && s.RescalesPerHour > c.MaxRescalesPerHour {
		e += (s.RescalesPerHour - c.MaxRescalesPerHour) / max(c.MaxRescalesPerHour, 1)
	}
	return e
}

// Meets says whether s is inside c.
func (c Constraints) Meets(s Scores) bool { return c.excess(s) == 0 }

// ranker orders candidates for an objective: those meeting the constraints first, then the
// objective's figures, then the fewest changed fields (a smaller patch for the same result).
type ranker struct {
	obj     Objective
	c       Constraints
	current Scores
	period  time.Duration
}

func (r ranker) balanced(s Scores) float64 {
	rel := func(v, cur, floor float64) float64 { return v / max(cur, floor) }
	return rel(s.PodHours, r.current.PodHours, 1e-9) +
		rel(s.AboveTarget.Seconds(), r.current.AboveTarget.Seconds(), 0.01*r.period.Seconds()) +
		rel(s.RescalesPerHour, r.current.RescalesPerHour, 1)
}

// compare is negative when a ranks before b.
func (r ranker) compare(a, b *Candidate) int {
	if c := cmp.Compare(r.c.excess(a.Scores), r.c.excess(b.Scores)); c != 0 {
		return c
	}
	sa, sb := a.Scores, b.Scores
	var keys [][2]float64
	switch r.obj {
	case Cost:
		keys = [][2]float64{{sa.PodHours, sb.PodHours}, {float64(sa.AboveTarget), float64(sb.AboveTarget)}, {sa.RescalesPerHour, sb.RescalesPerHour}}
	case Risk:
		keys = [][2]float64{{float64(sa.AboveTarget), float64(sb.AboveTarget)}, {float64(sa.Worst), float64(sb.Worst)}, {sa.PodHours, sb.PodHours}, {sa.RescalesPerHour, sb.RescalesPerHour}}
	default:
		keys = [][2]float64{{r.balanced(sa), r.balanced(sb)}, {sa.PodHours, sb.PodHours}}
	}
	for _, k := range keys {
		if c := cmp.Compare(k[0], k[1]); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(len(a.Changes), len(b.Changes)); c != 0 {
		return c
	}
	return slices.Compare(a.Point, b.Point)
}
