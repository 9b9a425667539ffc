// Package annotation is the decision history kubectl hpa run persists on each HPA, in the
// annotation hpa.kubectl-hpa.io/history, so that a run that restarts or takes a Lease over decides as one
// that never stopped: the recommendations still inside the longest stabilization window and
// the scale events still inside the longest policy period, compacted to the entries that can
// still decide a window. It encodes, decodes, compacts and validates that record.
//
// A leaf: the standard library, k8s.io/api, k8s.io/apimachinery and the pure decision core
// only, so that its fuzz target compiles little.
package annotation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Key is the HPA annotation holding the record.
const Key = "hpa.kubectl-hpa.io/history"

// FieldManager is the field manager kubectl hpa run writes with (status, scale, the record):
// Restore tells the HPA's own writes from another controller's by it.
const FieldManager = "kubectl-hpa"

// Version is the record format this package writes and reads.
const Version = 1

// writer is the record's "by": what wrote it.
const writer = "kubectl-hpa"

// MaxBytes bounds a record read: a larger one is not ours to trust. A compacted history is
// far smaller (a few hundred bytes; see docs/run.md).
const MaxBytes = 64 << 10

// Record is one HPA's persisted history. Times of entries are milliseconds before At, so a
// record carries one absolute time.
type Record struct {
	V  int    `json:"v"`
	By string `json:"by"`
	// Holder is the Lease identity of the run that wrote it (empty without a Lease).
	Holder string `json:"holder,omitempty"`
	// At is when it was written: the time of the decision it records.
	At time.Time `json:"at"`
	// UID is the HPA's: a record copied onto another HPA, or left on one recreated under the
	// same name, is not its history.
	UID string `json:"uid"`
	// SyncMillis is the writer's sync period.
	SyncMillis int64 `json:"sync"`
	// Horizon is how far back the record covers, in seconds: the longest stabilization window
	// and the longest scale-up and scale-down policy periods when it was compacted.
	Horizon Horizon `json:"hz"`
	// Open says the newest recommendation was still being made at every sync when the record
	// was written, and is made until the writer stops: a value that repeats is written once.
	Open bool `json:"open,omitempty"`
	// Recs are [replicas, ms before At], oldest first; Up and Down are [change, ms before At].
	Recs [][2]int64 `json:"rec"`
	Up   [][2]int64 `json:"up,omitempty"`
	Down [][2]int64 `json:"down,omitempty"`
}

// Horizon is how far back an HPA's next decisions look, in whole seconds.
type Horizon struct {
	Window, UpPeriod, DownPeriod int32
}

// MarshalJSON writes a Horizon as [window, up, down].
func (h Horizon) MarshalJSON() ([]byte, error) {
	return json.Marshal([3]int32{h.Window, h.UpPeriod, h.DownPeriod})
}

// UnmarshalJSON reads [window, up, down].
func (h *Horizon) UnmarshalJSON(b []byte) error {
	var a [3]int32
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*h = Horizon{a[0], a[1], a[2]}
	return nil
}

// HorizonOf is what hpa's decisions look back over under cfg: the longer stabilization window
// (the controller's downscale window without a behavior) and, with a behavior, each
// direction's longest policy period (upstream records scale events only with one).
func HorizonOf(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg replicas.Config) Horizon {
	b := replicas.EffectiveBehavior(hpa, cfg)
	if b == nil {
		return Horizon{Window: int32(cfg.DownscaleStabilizationWindow / time.Second)}
	}
	h := Horizon{Window: max(*b.ScaleUp.StabilizationWindowSeconds, *b.ScaleDown.StabilizationWindowSeconds)}
	for _, p := range b.ScaleUp.Policies {
		h.UpPeriod = max(h.UpPeriod, p.PeriodSeconds)
	}
	for _, p := range b.ScaleDown.Policies {
		h.DownPeriod = max(h.DownPeriod, p.PeriodSeconds)
	}
	return h
}

func seconds(s int32) time.Duration { return time.Duration(s) * time.Second }

// Compact keeps of h what a decision at now or later can still use under horizon hz: the
// recommendations newer than now - hz.Window of which each is strictly higher, or strictly
// lower, than every newer one (the highest and the lowest of any window ending at or after
// now are among them, whatever its length up to hz.Window), and the scale events newer than
// their direction's longest period. The newest recommendation is always kept.
// The result is sorted oldest first; h is not modified.
func Compact(h replicas.History, hz Horizon, now time.Time) replicas.History {
	out := replicas.History{
		ScaleUpEvents:   keepEvents(h.ScaleUpEvents, now.Add(-seconds(hz.UpPeriod))),
		ScaleDownEvents: keepEvents(h.ScaleDownEvents, now.Add(-seconds(hz.DownPeriod))),
	}
	if h.Recommendations == nil {
		return out
	}
	cutoff := now.Add(-seconds(hz.Window))
	recs := make([]replicas.Recommendation, 0, len(h.Recommendations))
	for _, r := range h.Recommendations {
		if r.Timestamp.After(cutoff) {
			recs = append(recs, r)
		}
	}
	slices.SortStableFunc(recs, func(a, b replicas.Recommendation) int { return a.Timestamp.Compare(b.Timestamp) })
	kept := make([]replicas.Recommendation, 0, 4)
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if len(kept) == 0 || r.Replicas > hi(kept) || r.Replicas < lo(kept) {
			kept = append(kept, r)
		}
	}
	slices.Reverse(kept)
	out.Recommendations = kept
	return out
}

func hi(recs []replicas.Recommendation) int32 {
	m := recs[0].Replicas
	for _, r := range recs[1:] {
		m = max(m, r.Replicas)
	}
	return m
}

func lo(recs []replicas.Recommendation) int32 {
	m := recs[0].Replicas
	for _, r := range recs[1:] {
		m = min(m, r.Replicas)
	}
	return m
}

func keepEvents(events []replicas.ScaleEvent, cutoff time.Time) []replicas.ScaleEvent {
	var out []replicas.ScaleEvent
	for _, e := range events {
		// An outdated slot is older than the longest period and is never counted again.
		if !e.Outdated && e.Timestamp.After(cutoff) {
			out = append(out, replicas.ScaleEvent{ReplicaChange: e.ReplicaChange, Timestamp: e.Timestamp})
		}
	}
	slices.SortStableFunc(out, func(a, b replicas.ScaleEvent) int { return a.Timestamp.Compare(b.Timestamp) })
	return out
}

// New is the record of a compacted history c (Compact's result) written at its newest
// recommendation's decision, at.
func New(c replicas.History, uid, holder string, at time.Time, sync time.Duration, hz Horizon) Record {
	// Whole milliseconds throughout, so that an entry has one absolute time in every record.
	r := Record{V: Version, By: writer, Holder: holder, At: time.UnixMilli(at.UnixMilli()).UTC(), UID: uid, SyncMillis: sync.Milliseconds(), Horizon: hz, Recs: [][2]int64{}}
	age := func(t time.Time) int64 { return max(0, at.UnixMilli()-t.UnixMilli()) }
	for i, rec := range c.Recommendations {
		r.Recs = append(r.Recs, [2]int64{int64(rec.Replicas), age(rec.Timestamp)})
		if i == len(c.Recommendations)-1 && !rec.Timestamp.Before(at) {
			r.Open = true
		}
	}
	for _, e := range c.ScaleUpEvents {
		r.Up = append(r.Up, [2]int64{int64(e.ReplicaChange), age(e.Timestamp)})
	}
	for _, e := range c.ScaleDownEvents {
		r.Down = append(r.Down, [2]int64{int64(e.ReplicaChange), age(e.Timestamp)})
	}
	return r
}

// Encode is the annotation's value.
func (r Record) Encode() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Only numbers, strings and a time: marshalling cannot fail.
		panic(err)
	}
	return string(b)
}

// Same reports whether r and o say the same about the past, so that o need not replace r:
// the same open value, and every entry of o (at its absolute time) already in r. Entries
// that only aged out of o do not count; where each was written does not either.
func (r Record) Same(o Record) bool {
	if r.UID != o.UID || r.Horizon != o.Horizon || r.Open != o.Open || len(r.Recs) == 0 != (len(o.Recs) == 0) {
		return false
	}
	if len(o.Recs) > 0 && o.Open && r.Recs[len(r.Recs)-1][0] != o.Recs[len(o.Recs)-1][0] {
		return false
	}
	closed := func(rec Record) [][2]int64 {
		if rec.Open {
			return rec.Recs[:len(rec.Recs)-1]
		}
		return rec.Recs
	}
	return contains(r.At, closed(r), o.At, closed(o)) && contains(r.At, r.Up, o.At, o.Up) && contains(r.At, r.Down, o.At, o.Down)
}

// contains reports whether every entry of sub (relative to subAt) is in set (relative to setAt).
func contains(setAt time.Time, set [][2]int64, subAt time.Time, sub [][2]int64) bool {
	abs := func(at time.Time, e [2]int64) [2]int64 {
		return [2]int64{e[0], at.Add(-time.Duration(e[1]) * time.Millisecond).UnixMilli()}
	}
	have := make(map[[2]int64]bool, len(set))
	for _, e := range set {
		have[abs(setAt, e)] = true
	}
	for _, e := range sub {
		if !have[abs(subAt, e)] {
			return false
		}
	}
	return true
}

// Error says why a record cannot be used at all.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return e.Reason }

func invalid(format string, args ...any) error { return &Error{Reason: fmt.Sprintf(format, args...)} }

// Decode reads an annotation value. Every failure is an *Error saying what is wrong.
func Decode(s string) (Record, error) {
	var r Record
	if len(s) > MaxBytes {
		return r, invalid("larger than %d KiB (%d bytes)", MaxBytes>>10, len(s))
	}
	var probe struct {
		V  *int   `json:"v"`
		By string `json:"by"`
	}
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || isEOFSyntax(s, err) {
			return r, invalid("truncated JSON (%d bytes)", len(s))
		}
		return r, invalid("not valid JSON: %v", err)
	}
	switch {
	case probe.By != writer || probe.V == nil:
		return r, invalid("not a kubectl-hpa history record")
	case *probe.V > Version:
		return r, invalid("format version %d is newer than this kubectl-hpa reads (%d)", *probe.V, Version)
	case *probe.V < Version:
		return r, invalid("unknown format version %d", *probe.V)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, invalid("not a valid version %d record: %v", Version, err)
	}
	if err := r.check(); err != nil {
		return Record{}, err
	}
	// "up": [] and no "up" mean the same (Encode omits an empty list); one form, so that a
	// decoded record equals itself encoded and decoded again.
	if len(r.Up) == 0 {
		r.Up = nil
	}
	if len(r.Down) == 0 {
		r.Down = nil
	}
	return r, nil
}

// isEOFSyntax tells a document cut short from one that is wrong: encoding/json reports
// "unexpected end of JSON input" as a SyntaxError at the end.
func isEOFSyntax(s string, err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Offset >= int64(len(s)) && len(s) > 0
}

// maxAge bounds entry ages (a day in ms); windows and periods are at most an hour.
const maxAge = 24 * 60 * 60 * 1000

func (r Record) check() error {
	switch {
	case r.At.IsZero():
		return invalid("no time of writing (at)")
	case r.UID == "":
		return invalid("no HPA uid")
	case r.Recs == nil:
		return invalid("no recommendations (rec)")
	case r.SyncMillis < 0 || r.Horizon.Window < 0 || r.Horizon.UpPeriod < 0 || r.Horizon.DownPeriod < 0:
		return invalid("a negative sync period or horizon")
	}
	for _, list := range []struct {
		name    string
		entries [][2]int64
		minVal  int64
	}{{"rec", r.Recs, 0}, {"up", r.Up, 1}, {"down", r.Down, 1}} {
		for i, e := range list.entries {
			if e[0] < list.minVal || e[0] > 1<<31-1 {
				return invalid("%s[%d]: replica count %d out of range", list.name, i, e[0])
			}
			if e[1] < 0 || e[1] > maxAge {
				return invalid("%s[%d]: age %d ms out of range", list.name, i, e[1])
			}
		}
	}
	if r.Open && len(r.Recs) == 0 {
		return invalid("open without a recommendation")
	}
	return nil
}

// Restored is what a record gives a decision.
type Restored struct {
	History replicas.History
	// Dropped counts the entries too old for hpa's current horizon.
	Dropped int
	// Notes say what was left out and why (a horizon that grew, entries from the future).
	Notes []string
}

// Restore turns r into the history hpa decides from at now, under cfg. openUntil is when the
// writer last made the open recommendation, if known better than r.At (the Lease's last renewal
// by the previous holder, or its release); it is clamped to [r.At, now]. It refuses (an *Error)
// a record of another HPA (uid), and one written before another controller wrote the HPA's
// status (ownManager is this controller's field manager). Entries too old for the current
// horizon are dropped; none left means the core's seed (the current size at now), as upstream
// after a restart.
func Restore(r Record, hpa *autoscalingv2.HorizontalPodAutoscaler, cfg replicas.Config, ownManager string, now, openUntil time.Time) (Restored, error) {
	var out Restored
	if string(hpa.UID) != r.UID {
		return out, invalid("recorded for another HPA (uid %s, this one is %s)", r.UID, hpa.UID)
	}
	for _, e := range hpa.ManagedFields {
		// managedFields times are whole seconds: a write in the record's own second is ours.
		if e.Subresource == "status" && e.Manager != ownManager && e.Time != nil && e.Time.After(r.At) && e.Time.Sub(r.At) >= time.Second {
			return out, invalid("%s wrote the HPA's status at %s, after this record (%s)", e.Manager, e.Time.UTC().Format(time.RFC3339), r.At.UTC().Format(time.RFC3339))
		}
	}
	hz := HorizonOf(hpa, cfg)
	if hz.Window > r.Horizon.Window {
		out.Notes = append(out.Notes, fmt.Sprintf("the stabilization window grew from %ds to %ds since: recommendations older than %ds were not kept", r.Horizon.Window, hz.Window, r.Horizon.Window))
	}
	if hz.UpPeriod > r.Horizon.UpPeriod && len(r.Up) > 0 || hz.DownPeriod > r.Horizon.DownPeriod && len(r.Down) > 0 {
		out.Notes = append(out.Notes, "a policy period grew since: scale events older than the recorded one were not kept")
	}
	if r.At.After(now) {
		out.Notes = append(out.Notes, fmt.Sprintf("written %s in the future (clock skew): its times are taken as now at the latest", r.At.Sub(now).Round(time.Millisecond)))
	}
	end := r.At
	if openUntil.After(end) {
		end = openUntil
	}
	if end.After(now) {
		end = now
	}
	when := func(e [2]int64) time.Time {
		t := r.At.Add(-time.Duration(e[1]) * time.Millisecond)
		if t.After(now) {
			t = now
		}
		return t
	}
	recCut := now.Add(-seconds(hz.Window))
	var recs []replicas.Recommendation
	for i, e := range r.Recs {
		t := when(e)
		if r.Open && i == len(r.Recs)-1 {
			t = end
		}
		if !t.After(recCut) {
			out.Dropped++
			continue
		}
		recs = append(recs, replicas.Recommendation{Replicas: int32(e[0]), Timestamp: t})
	}
	out.History.Recommendations = recs
	events := func(list [][2]int64, period int32) []replicas.ScaleEvent {
		cut := now.Add(-seconds(period))
		var evs []replicas.ScaleEvent
		for _, e := range list {
			t := when(e)
			if !t.After(cut) {
				out.Dropped++
				continue
			}
			evs = append(evs, replicas.ScaleEvent{ReplicaChange: int32(e[0]), Timestamp: t})
		}
		return evs
	}
	out.History.ScaleUpEvents = events(r.Up, hz.UpPeriod)
	out.History.ScaleDownEvents = events(r.Down, hz.DownPeriod)
	return out, nil
}

// Entries counts what a restored history holds.
func (r Restored) Entries() int {
	return len(r.History.Recommendations) + len(r.History.ScaleUpEvents) + len(r.History.ScaleDownEvents)
}
