package rerun

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/recording"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Report is a rerun's verdict on every recorded sync.
type Report struct {
	// Syncs are the recorded syncs in file order, each with its replayed result.
	Syncs []Sync
	// Divergences lists every field where the rerun differs from the recording; none
	// means every decision, outcome and kept history was reproduced exactly.
	Divergences []Divergence
}

// Equal reports whether the rerun reproduced every recorded sync exactly.
func (r *Report) Equal() bool { return len(r.Divergences) == 0 }

// Sync is one recorded sync and what the rerun decided for it.
type Sync struct {
	// Index is the sync's position among the recording's syncs (from 0), Line its line.
	Index int
	Line  int
	Key   string
	Now   time.Time
	// Recorded is what run decided; Replayed what the rerun decided from the same inputs.
	Recorded, Replayed recording.Result
	// Input, Decision and Outcome are the replayed decision in full (its inputs, trace,
	// metrics and pods, the status it settles to), for callers that render it as run did;
	// DryRunReason is the recorded one.
	Input        replicas.Input
	Decision     replicas.Decision
	Outcome      replicas.Outcome
	DryRunReason string
}

// Divergence is one field where a replayed sync differs from the recorded one.
type Divergence struct {
	Index int
	Line  int
	Key   string
	// Field is the JSON path in the sync entry ("result.desiredReplicas",
	// "history.recommendations[2].replicas"); history is the one held before deciding.
	Field string
	// Recorded and Replayed are the field's JSON values ("" when absent).
	Recorded, Replayed string
}

func (d Divergence) String() string {
	return fmt.Sprintf("sync %d (line %d, %s): %s: recorded %s, replayed %s", d.Index, d.Line, d.Key, d.Field, orAbsent(d.Recorded), orAbsent(d.Replayed))
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// Options tune a rerun.
type Options struct {
	// Keys limits the rerun to these HPAs ("ns/name"); empty replays every one.
	Keys []string
}

// Run re-decides every sync of rec through evaluation.Evaluate and replicas.Settle with
// the recorded controller configuration, carrying each HPA's history forward from its
// previous sync as run does (a new Term starts every HPA from what run's new controller held
// at its first sync: nothing, or the history it restored from the HPA's persisted record),
// and compares every sync, inputs held and results, with the recording. Only a
// cancelled ctx or a sync whose HPA cannot be evaluated is an error; differences are the
// report's.
func Run(ctx context.Context, rec *recording.Recording, opts Options) (*Report, error) {
	cfg := rec.Header.Config()
	keys := sets.New(opts.Keys...)
	held := map[string]replicas.History{}
	started := sets.New[string]()
	term := 0
	rep := &Report{Syncs: make([]Sync, 0, len(rec.Syncs))}
	for i := range rec.Syncs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := &rec.Syncs[i]
		if keys.Len() > 0 && !keys.Has(s.Key) {
			continue
		}
		if s.Term != term {
			term = s.Term
			clear(held)
			started.Clear()
		}
		if !started.Has(s.Key) {
			started.Insert(s.Key)
			if s.History != nil {
				// Restored by run (--persist-history) before its first decision.
				held[s.Key] = s.History.Core()
			}
		}
		src := NewSource(s, held[s.Key], rec.Header.MetricsSource)
		ev, err := evaluation.Evaluate(ctx, src, s.HPA.Namespace, s.HPA.Name, evaluation.Options{Now: s.Now, Config: cfg, Overlaps: src})
		if err != nil {
			return nil, fmt.Errorf("%s:%d: replaying the sync of %s: %w", rec.Name, s.Line, s.Key, err)
		}
		// The scale write's result is the recorded one when the rerun writes as run did;
		// a rescale run did not make is taken as written.
		var scaleErr error
		if ev.Decision.Rescale && s.Result.Rescale {
			scaleErr = s.ScaleWriteError.Err()
		}
		out, kept := replicas.Settle(ev.Input, ev.Decision, scaleErr, s.DryRunReason == "")
		held[s.Key] = kept
		// The status write's result is the recorded one too: the sync's error is then the
		// write's, as run printed it (the recorded outcome is the one before the write).
		statusErr := s.StatusWriteError.Err()
		replayed := recording.SyncOf(recording.Reconcile{Term: s.Term, Key: s.Key, Input: ev.Input, PodsErr: ev.PodsErr,
			Decision: ev.Decision, ScaleWriteErr: scaleErr, StatusWriteErr: statusErr, Outcome: out, Kept: kept, DryRunReason: s.DryRunReason})
		if statusErr != nil {
			out.Err = replicas.StatusWriteFailed(s.HPA.Name, statusErr)
		}
		rep.Syncs = append(rep.Syncs, Sync{Index: i, Line: s.Line, Key: s.Key, Now: s.Now, Recorded: s.Result, Replayed: replayed.Result,
			Input: ev.Input, Decision: ev.Decision, Outcome: out, DryRunReason: s.DryRunReason})
		diffs, err := diff(s, &replayed)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: comparing the sync of %s: %w", rec.Name, s.Line, s.Key, err)
		}
		for _, d := range diffs {
			d.Index, d.Line, d.Key = i, s.Line, s.Key
			rep.Divergences = append(rep.Divergences, d)
		}
	}
	return rep, nil
}

// diff compares two sync entries as written to the file, field by field.
func diff(recorded, replayed *recording.Sync) ([]Divergence, error) {
	a, err := generic(recorded)
	if err != nil {
		return nil, err
	}
	b, err := generic(replayed)
	if err != nil {
		return nil, err
	}
	var out []Divergence
	walk("", a, b, &out)
	return out, nil
}

func generic(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var g any
	err = json.Unmarshal(data, &g)
	return g, err
}

// maxValue bounds a value quoted in a divergence.
const maxValue = 300

func quote(v any, present bool) string {
	if !present {
		return ""
	}
	data, _ := json.Marshal(v)
	s := string(data)
	if len(s) > maxValue {
		s = s[:maxValue] + "..."
	}
	return s
}

func walk(path string, a, b any, out *[]Divergence) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		names := sets.KeySet(am).Union(sets.KeySet(bm))
		for _, k := range sets.List(names) {
			av, aok := am[k]
			bv, bok := bm[k]
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !aok || !bok {
				*out = append(*out, Divergence{Field: p, Recorded: quote(av, aok), Replayed: quote(bv, bok)})
				continue
			}
			walk(p, av, bv, out)
		}
		return
	}
	as, aIsList := a.([]any)
	bs, bIsList := b.([]any)
	if aIsList && bIsList {
		for i := range max(len(as), len(bs)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(as):
				*out = append(*out, Divergence{Field: p, Replayed: quote(bs[i], true)})
			case i >= len(bs):
				*out = append(*out, Divergence{Field: p, Recorded: quote(as[i], true)})
			default:
				walk(p, as[i], bs[i], out)
			}
		}
		return
	}
	if full(a) != full(b) {
		*out = append(*out, Divergence{Field: path, Recorded: quote(a, true), Replayed: quote(b, true)})
	}
}

func full(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
