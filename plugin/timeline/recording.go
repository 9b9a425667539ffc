package timeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/rerun"
)

// fromRecording is the timeline a kubectl hpa run --record file holds for the HPA: every
// sync as run made it (its replicas, decision, rescale and cause), each re-decided through
// the core (plugin/rerun) for the constraint that held it, which the file does not keep.
// The period is the last since of the recording, ending at its last sync of the HPA.
func fromRecording(ctx context.Context, path, namespace string, explicitNS bool, name string, since time.Duration) (*v1alpha1.Timeline, error) {
	// The syncs of the HPAs of that name only: a recording of a fleet is gigabytes.
	rec, err := recording.Load(path, func(key string) bool { return strings.HasSuffix(key, "/"+name) })
	if err != nil {
		return nil, cmdutil.UsageErrorf("--record: %v", err)
	}
	key, err := recordedKey(rec, namespace, explicitNS, name)
	if err != nil {
		return nil, err
	}
	var syncs []rerun.Sync
	rep, err := rerun.Run(ctx, rec.Name, rec.Header, rec.All(), rerun.Options{Keys: []string{key}, Each: func(s rerun.Sync) error {
		syncs = append(syncs, s)
		return nil
	}})
	if err != nil {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--record: %w", err)}
	}
	last := syncs[len(syncs)-1]
	to := last.Now
	from := to.Add(-since)
	if first := syncs[0].Now; first.After(from) {
		from = first
	}
	src := v1alpha1.TimelineSource{Kind: v1alpha1.TimelineRecording, Name: path, Exact: rep.Equal()}
	if rec.CutLine > 0 {
		src.Notes = append(src.Notes, fmt.Sprintf("line %d, the last, was cut short (run was stopped while writing it) and is left out", rec.CutLine))
	}
	if covered := to.Sub(syncs[0].Now); covered < since {
		src.Notes = append(src.Notes, fmt.Sprintf("the recording covers %s of the %s asked (--since)", covered.Round(time.Second), since))
	}
	if !rep.Equal() {
		d := rep.Divergences[0]
		src.Notes = append(src.Notes, fmt.Sprintf("re-deciding the recording differs from it at %d field(s), first %s: the replicas and rescales are run's, the constraints the re-decision's", rep.Differing, d))
	}
	t := newTimeline(last.Input.HPA, from, to, src)
	t.SyncPeriodSeconds = rec.Header.Controller.SyncPeriod.Std().Seconds()
	for _, s := range syncs {
		if s.Now.Before(from) {
			continue
		}
		row := syncOf(s.Input.HPA, s.Now, s.Decision)
		// What run did, where it may differ from the re-decision.
		row.Replicas, row.Desired, row.Rescale = s.Run.CurrentReplicas, s.Run.DesiredReplicas, s.Run.Rescale
		row.Reason = ""
		if row.Rescale {
			row.Reason = s.Run.Reason
		}
		t.Syncs = append(t.Syncs, row)
	}
	return t, nil
}

// recordedKey is the "namespace/name" of the HPA in rec: name in namespace, or, when -n was
// not given, the only HPA of that name the recording holds.
func recordedKey(rec *recording.Recording, namespace string, explicitNS bool, name string) (string, error) {
	keys := rec.Keys
	want := namespace + "/" + name
	if slices.Contains(keys, want) {
		return want, nil
	}
	if !explicitNS {
		var named []string
		for _, k := range keys {
			if strings.HasSuffix(k, "/"+name) {
				named = append(named, k)
			}
		}
		if len(named) == 1 {
			return named[0], nil
		}
	}
	if len(keys) == 0 {
		return "", cmdutil.UsageErrorf("--record: %s holds no sync", rec.Name)
	}
	return "", cmdutil.UsageErrorf("--record: %s holds no sync of %s: it holds %s", rec.Name, want, cmdutil.SomeNames(slices.Sorted(slices.Values(keys)), cmdutil.MaxNamedHPAs))
}
