package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// historyAnnotation says how a status write edits hpa's history annotation for the history
// kept after a decision at now, and whether the history changed from what the annotation
// says (then it is worth a write of its own). A repeated recommendation, or entries that only
// aged out, change nothing: a steady HPA's history costs no write.
func (c *Controller) historyAnnotation(hpa *autoscalingv2.HorizontalPodAutoscaler, kept replicas.History, now time.Time) (func(*autoscalingv2.HorizontalPodAutoscaler), bool) {
	old, has := hpa.Annotations[annotation.Key]
	if !c.opts.PersistHistory {
		if !has {
			return nil, false
		}
		return func(obj *autoscalingv2.HorizontalPodAutoscaler) { delete(obj.Annotations, annotation.Key) }, false
	}
	hz := annotation.HorizonOf(hpa, c.opts.Config)
	rec := annotation.New(annotation.Compact(kept, hz, now), string(hpa.UID), c.holder, now, c.opts.SyncPeriod, hz)
	value := rec.Encode()
	changed := true
	if has {
		if prev, err := annotation.Decode(old); err == nil {
			changed = !prev.Same(rec)
		}
	}
	return func(obj *autoscalingv2.HorizontalPodAutoscaler) {
		if obj.Annotations == nil {
			obj.Annotations = map[string]string{}
		}
		obj.Annotations[annotation.Key] = value
	}, changed
}

// restoreHistory fills the memory from the histories persisted on the HPAs in the cache,
// before the first decision, and says in one line each what it restored and what it ignored.
// It never blocks a decision: an unusable record is one line and upstream's fresh start.
func (c *Controller) restoreHistory(ctx context.Context) {
	if !c.opts.PersistHistory {
		return
	}
	logger := klog.FromContext(ctx)
	now := c.clock.Now()
	var (
		restored, entries, dropped int
		holders                    = map[string]bool{}
		newest, oldest             time.Time
		lines                      []string
	)
	for _, obj := range c.hpaStore.List() {
		hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			continue
		}
		rec, has, err := history.ReadRecorded(hpa, c.opts.Config, now, c.prevSeen)
		switch {
		case !has:
			continue
		case err != nil:
			lines = append(lines, history.IgnoredMessage(hpa.Namespace, hpa.Name, err,
				"deciding as upstream does after a restart (the current size as its only recommendation, no scale events)"))
			continue
		}
		for _, n := range rec.Restored.Notes {
			lines = append(lines, fmt.Sprintf("decision history of HPA %s/%s: %s", hpa.Namespace, hpa.Name, n))
		}
		restored++
		entries += rec.Restored.Entries()
		dropped += rec.Restored.Dropped
		holders[holderName(rec.Record.Holder)] = true
		if newest.IsZero() || rec.Record.At.After(newest) {
			newest = rec.Record.At
		}
		if oldest.IsZero() || rec.Record.At.Before(oldest) {
			oldest = rec.Record.At
		}
		c.mu.Lock()
		c.history[hpa.Namespace+"/"+hpa.Name] = rec.Restored.History
		c.mu.Unlock()
	}
	sort.Strings(lines)
	if restored > 0 {
		names := make([]string, 0, len(holders))
		for h := range holders {
			names = append(names, h)
		}
		sort.Strings(names)
		written := fmt.Sprintf("%s ago", now.Sub(newest).Round(time.Second))
		if !oldest.Equal(newest) {
			written = fmt.Sprintf("%s to %s ago", now.Sub(newest).Round(time.Second), now.Sub(oldest).Round(time.Second))
		}
		lines = append([]string{fmt.Sprintf("restored the decision history of %d HPA(s) recorded by %s (written %s): %d recommendations and scale events, %d too old for their windows dropped",
			restored, strings.Join(names, ", "), written, entries, dropped)}, lines...)
	}
	for _, l := range lines {
		logger.V(1).Info("Decision history", "note", l)
		if c.note != nil {
			c.note(l)
		}
	}
}

// holderName is how a record's holder is shown.
func holderName(h string) string {
	if h == "" {
		return "a kubectl hpa run without a Lease"
	}
	return h
}
