package search

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// DefaultBudget is how many specs a search plays at most.
const DefaultBudget = 240

// Problem is one search: the space around an HPA, and the load, workload and model every
// candidate is played on (Spec.Variants is ignored).
type Problem struct {
	Space       *Space
	Spec        sim.Spec
	Objective   Objective
	Constraints Constraints
	// Budget is how many candidates to simulate at most (0: DefaultBudget), the current spec
	// among them.
	Budget int
	// Workers play candidates side by side (0: GOMAXPROCS).
	Workers int
	// Validation is how the API server validates a candidate.
	Validation validation.Options
	// Exhaustive plays every point of the space instead of searching (tests compare the two).
	Exhaustive bool
}

// Candidate is one spec played on the load.
type Candidate struct {
	Point   Coord
	Changes []string
	HPA     *autoscalingv2.HorizontalPodAutoscaler
	Scores  Scores
}

// Result is a search's outcome.
type Result struct {
	// Candidates are every spec played, the current one first.
	Candidates []*Candidate
	// Best is the recommendation: the first in the objective's order.
	Best *Candidate
	// Met says whether Best meets the constraints; when false it is the closest to them.
	Met bool
	// Pareto are the candidates no other beats on cost, risk and churn at once, cheapest first.
	Pareto []*Candidate
	// Refused counts the points the API server would refuse (never played).
	Refused int
}

// Current is the HPA as it is.
func (r *Result) Current() *Candidate { return r.Candidates[0] }

// Run plays the current spec, a coarse grid over the axes that move the figures most, then
// refines around the best few by moving one axis one step at a time until the budget is spent
// or no neighbour of them is left unplayed.
func Run(ctx context.Context, p Problem) (*Result, error) {
	if p.Budget <= 0 {
		p.Budget = DefaultBudget
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	if p.Spec.Duration == 0 {
		p.Spec.Duration = p.Spec.Load.End() // as sim.Run reads it: the balanced score divides by it
	}
	s := &searcher{p: p, seen: map[string]bool{}}
	if err := s.play(ctx, []Coord{p.Space.Current()}); err != nil {
		return nil, err
	}
	if len(s.res.Candidates) == 0 {
		return nil, errors.New("the API server would refuse the HPA as it is: nothing to compare candidates with")
	}
	s.rank = ranker{obj: p.Objective, c: p.Constraints, current: s.res.Candidates[0].Scores, period: p.Spec.Duration}
	var err error
	if p.Exhaustive {
		err = s.play(ctx, p.Space.all())
	} else {
		err = s.search(ctx)
	}
	if err != nil {
		return nil, err
	}
	best := slices.MinFunc(s.res.Candidates, s.rank.compare)
	s.res.Best, s.res.Met = best, p.Constraints.Meets(best.Scores)
	s.res.Pareto = pareto(s.res.Candidates)
	return &s.res, nil
}

type searcher struct {
	p    Problem
	rank ranker
	seen map[string]bool
	res  Result
}

func (s *searcher) left() int { return s.p.Budget - len(s.res.Candidates) }

// coarseOrder is the order axes join the coarse grid in: those that move cost and risk most first.
var coarseOrder = []string{"", "scaleDown.stabilizationWindowSeconds", "min", "scaleUp.policies", "scaleDown.policies", "max", "scaleUp.stabilizationWindowSeconds"}

// refineSeeds is how many of the best candidates a refinement step moves from.
const refineSeeds = 3

func (s *searcher) search(ctx context.Context) error {
	if err := s.play(ctx, s.coarse()); err != nil {
		return err
	}
	for s.left() > 0 {
		seeds := slices.Clone(s.res.Candidates)
		slices.SortFunc(seeds, s.rank.compare)
		// The neighbours of the best seeds; when those are all played, of the next best, so
		// that the budget goes to the region the objective prefers.
		var next []Coord
		for i, c := range seeds {
			if i >= refineSeeds && len(next) > 0 {
				break
			}
			next = append(next, s.neighbours(c.Point)...)
		}
		if len(next) == 0 {
			return nil
		}
		if err := s.play(ctx, next); err != nil {
			return err
		}
	}
	return nil
}

// coarse is the grid over each axis' ends, middle and current value, the axes joining in
// coarseOrder (metric targets first) while the grid stays within half the budget.
func (s *searcher) coarse() []Coord {
	axes := s.p.Space.Axes
	var order []int
	for _, name := range coarseOrder {
		for i, a := range axes {
			_, isTarget := metricAxis(a.Name)
			if !a.Kept() && (name == "" && isTarget || name != "" && a.Name == name) {
				order = append(order, i)
			}
		}
	}
	grid := []Coord{s.p.Space.Current()}
	for _, i := range order {
		a := axes[i]
		vals := []int{0, len(a.Values) / 2, len(a.Values) - 1, a.Current}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		if len(grid)*len(vals) > s.p.Budget/2 {
			break
		}
		var next []Coord
		for _, g := range grid {
			for _, v := range vals {
				q := slices.Clone(g)
				q[i] = v
				next = append(next, q)
			}
		}
		grid = next
	}
	return grid
}

// neighbours are the unplayed points one step from p along one axis.
func (s *searcher) neighbours(p Coord) []Coord {
	var out []Coord
	for i, a := range s.p.Space.Axes {
		for _, d := range []int{-1, 1} {
			if v := p[i] + d; v >= 0 && v < len(a.Values) {
				q := slices.Clone(p)
				q[i] = v
				if !s.seen[q.key()] {
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// play validates and simulates the points not seen yet, within the budget, on Workers
// goroutines, and adds them to the candidates in the points' order.
func (s *searcher) play(ctx context.Context, points []Coord) error {
	var todo []*Candidate
	for _, p := range points {
		k := p.key()
		if s.seen[k] {
			continue
		}
		if len(todo) >= s.left() {
			break
		}
		s.seen[k] = true
		h := s.p.Space.HPA(p)
		if errs := validation.Validate(h, s.p.Validation); len(errs) > 0 {
			s.res.Refused++
			continue
		}
		todo = append(todo, &Candidate{Point: p, Changes: s.p.Space.Changes(p), HPA: h})
	}
	if err := playAll(ctx, s.p.Spec, s.p.Workers, s.p.Space.Base, todo); err != nil {
		return err
	}
	s.res.Candidates = append(s.res.Candidates, todo...)
	return nil
}

// playAll simulates each candidate on spec with a pool of workers and sets its scores, the
// time above target measured against ref's targets.
func playAll(ctx context.Context, spec sim.Spec, workers int, ref *autoscalingv2.HorizontalPodAutoscaler, cs []*Candidate) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *Candidate)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for c := range jobs {
				sc, err := Play(ctx, spec, c.HPA, ref)
				if err != nil {
					if errs[w] == nil && ctx.Err() == nil {
						errs[w] = fmt.Errorf("candidate %s: %w", strings.Join(c.Changes, ","), err)
					}
					cancel()
					continue
				}
				c.Scores = sc
			}
		})
	}
	for _, c := range cs {
		if ctx.Err() != nil {
			break
		}
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// Play is one spec's scores on spec's load, workload and model; its time above target is
// measured against ref's targets (the current spec's: a candidate's own higher target would
// hide the very demand it leaves unserved).
func Play(ctx context.Context, spec sim.Spec, h, ref *autoscalingv2.HorizontalPodAutoscaler) (Scores, error) {
	spec.Variants = []sim.Variant{{Name: h.Name, HPA: h, RiskAgainst: ref}}
	spec.SummaryOnly = true
	res, err := sim.Run(ctx, spec)
	if err != nil {
		return Scores{}, err
	}
	return ScoresOf(res.Variants[0].Summary, res.Duration), nil
}

// all is every point of the space.
func (s *Space) all() []Coord {
	out := []Coord{make(Coord, len(s.Axes))}
	for i, a := range s.Axes {
		var next []Coord
		for _, p := range out {
			for v := range a.Values {
				q := slices.Clone(p)
				q[i] = v
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}

// pareto are the candidates no other dominates, cheapest first; of candidates with the same
// scores, the one changing the fewest fields.
func pareto(cs []*Candidate) []*Candidate {
	var front []*Candidate
	for _, c := range cs {
		dominated := false
		for _, o := range cs {
			if o.Scores.dominates(c.Scores) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, c)
		}
	}
	slices.SortStableFunc(front, func(a, b *Candidate) int {
		if c := cmpFloat(a.Scores.PodHours, b.Scores.PodHours); c != 0 {
			return c
		}
		if c := cmpFloat(a.Scores.AboveTarget.Seconds(), b.Scores.AboveTarget.Seconds()); c != 0 {
			return c
		}
		if c := cmpFloat(a.Scores.RescalesPerHour, b.Scores.RescalesPerHour); c != 0 {
			return c
		}
		return len(a.Changes) - len(b.Changes)
	})
	return slices.CompactFunc(front, func(a, b *Candidate) bool {
		return a.Scores.PodHours == b.Scores.PodHours && a.Scores.AboveTarget == b.Scores.AboveTarget && a.Scores.RescalesPerHour == b.Scores.RescalesPerHour
	})
}

// DominatedBy counts the candidates that beat c on cost, risk and churn at once.
func (r *Result) DominatedBy(c *Candidate) int {
	n := 0
	for _, o := range r.Candidates {
		if o.Scores.dominates(c.Scores) {
			n++
		}
	}
	return n
}
