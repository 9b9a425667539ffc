package rerun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
)

// Report is a rerun's verdict on every sync of the recording it re-decided.
type Report struct {
	// Syncs is how many syncs were re-decided, Keys the HPAs ("ns/name") they were of, sorted.
	Syncs int
	Keys  []string
	// Divergences are the first MaxDivergences fields where the rerun differs from the
	// recording, Differing counts them all; none means every decision, outcome and kept
	// history was reproduced exactly.
	Divergences []Divergence
	Differing   int
}

// MaxDivergences bounds the divergences a report keeps: a recording rerun by a release
// that decides otherwise may differ at every sync of a gigabyte file.
const MaxDivergences = 1000

// Equal reports whether the rerun reproduced every sync of the recording exactly.
func (r *Report) Equal() bool { return r.Differing == 0 }

// Sync is one sync of the recording and what the rerun decided for it.
type Sync struct {
	// Index is the sync's place among the recording's syncs (from 0), Line its line.
	Index int
	Line  int
	Key   string
	Now   time.Time
	// Run is what run decided; Rerun what the rerun decided from the same inputs.
	Run, Rerun recording.Result
	// Input, Decision and Outcome are the rerun's decision in full (its inputs, trace,
	// metrics and pods, the status it settles to), for callers that render it as run did;
	// DryRunReason is run's.
	Input        replicas.Input
	Decision     replicas.Decision
	Outcome      replicas.Outcome
	DryRunReason string
}

// Divergence is one field where the rerun of a sync differs from what run decided.
type Divergence struct {
	Index int
	Line  int
	Key   string
	// Field is the JSON path in the sync entry ("result.desiredReplicas",
	// "history.recommendations[2].replicas"); history is the one held before deciding.
	Field string
	// Run and Rerun are the field's JSON values ("" when absent).
	Run, Rerun string
}

func (d Divergence) String() string {
	return fmt.Sprintf("sync %d (line %d, %s): %s: recorded %s, replayed %s", d.Index, d.Line, d.Key, d.Field, orAbsent(d.Run), orAbsent(d.Rerun))
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// Options tune a rerun.
type Options struct {
	// Keys limits the rerun to these HPAs ("ns/name"); empty reruns every one.
	Keys []string
	// Each, when set, is given every rerun sync in file order; its error ends the rerun.
	// The report keeps none: a rerun holds one sync at a time.
	Each func(Sync) error
}

// Run re-decides every sync of syncs (a recording's, in file order: recording.Reader.All
// reads them from the file as it goes) through evaluation.Evaluate and replicas.Settle with
// the controller configuration of h, carrying each HPA's history forward from its previous
// sync as run does (a new Term starts every HPA from what run's new controller held at its
// first sync: nothing, or the history it restored from the HPA's persisted record), and
// compares every sync, inputs held and results, with the recording; name is the file's, for
// messages. Only a cancelled ctx, a recording that does not read, a sync whose HPA cannot be
// evaluated or an error of opts.Each is an error; differences are the report's.
func Run(ctx context.Context, name string, h recording.Header, syncs iter.Seq2[*recording.Sync, error], opts Options) (*Report, error) {
	cfg := h.Config()
	only := sets.New(opts.Keys...)
	keys := sets.New[string]()
	held := map[string]replicas.History{}
	started := sets.New[string]()
	term := 0
	rep := &Report{}
	for s, err := range syncs {
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if only.Len() > 0 && !only.Has(s.Key) {
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
		src := NewSource(s, held[s.Key], h.MetricsSource)
		ev, err := evaluation.Evaluate(ctx, src, s.HPA.Namespace, s.HPA.Name, evaluation.Options{Now: s.Now, Config: cfg, Overlaps: src})
		if err != nil {
			return nil, fmt.Errorf("%s:%d: replaying the sync of %s: %w", name, s.Line, s.Key, err)
		}
		// The scale write's result is run's when the rerun writes as run did;
		// a rescale run did not make is taken as written.
		var scaleErr error
		if ev.Decision.Rescale && s.Result.Rescale {
			scaleErr = s.ScaleWriteError.Err()
		}
		out, kept := replicas.Settle(ev.Input, ev.Decision, scaleErr, s.DryRunReason == "")
		held[s.Key] = kept
		// The status write's result is run's too: the sync's error is then the
		// write's, as run printed it (run's outcome is the one before the write).
		statusErr := s.StatusWriteError.Err()
		rerun := recording.SyncOf(recording.Reconcile{Term: s.Term, Key: s.Key, Input: ev.Input, PodsErr: ev.PodsErr,
			Decision: ev.Decision, ScaleWriteErr: scaleErr, StatusWriteErr: statusErr, Outcome: out, Kept: kept, DryRunReason: s.DryRunReason})
		if statusErr != nil {
			out.Err = replicas.StatusWriteFailed(s.HPA.Name, statusErr)
		}
		rep.Syncs++
		keys.Insert(s.Key)
		diffs, err := diff(s, &rerun)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: comparing the sync of %s: %w", name, s.Line, s.Key, err)
		}
		for _, d := range diffs {
			rep.Differing++
			if len(rep.Divergences) < MaxDivergences {
				d.Index, d.Line, d.Key = s.Index, s.Line, s.Key
				rep.Divergences = append(rep.Divergences, d)
			}
		}
		if opts.Each != nil {
			if err := opts.Each(Sync{Index: s.Index, Line: s.Line, Key: s.Key, Now: s.Now, Run: s.Result, Rerun: rerun.Result,
				Input: ev.Input, Decision: ev.Decision, Outcome: out, DryRunReason: s.DryRunReason}); err != nil {
				return nil, err
			}
		}
	}
	rep.Keys = sets.List(keys)
	return rep, nil
}

// diff compares two sync entries as written to the file, field by field. Entries that
// write out the same bytes are equal; only others are walked, as they are rare and the walk
// costs most of a rerun.
func diff(run, rerun *recording.Sync) ([]Divergence, error) {
	ra, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	rb, err := json.Marshal(rerun)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(ra, rb) {
		return nil, nil
	}
	var a, b any
	if err := json.Unmarshal(ra, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(rb, &b); err != nil {
		return nil, err
	}
	var out []Divergence
	walk("", a, b, &out)
	return out, nil
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
				*out = append(*out, Divergence{Field: p, Run: quote(av, aok), Rerun: quote(bv, bok)})
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
				*out = append(*out, Divergence{Field: p, Rerun: quote(bs[i], true)})
			case i >= len(bs):
				*out = append(*out, Divergence{Field: p, Run: quote(as[i], true)})
			default:
				walk(p, as[i], bs[i], out)
			}
		}
		return
	}
	if full(a) != full(b) {
		*out = append(*out, Divergence{Field: path, Run: quote(a, true), Rerun: quote(b, true)})
	}
}

func full(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
