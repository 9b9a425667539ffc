package history

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// The Lease kube-controller-manager's leader election keeps: who leads, since when.
const (
	LeaderLeaseNamespace = "kube-system"
	LeaderLeaseName      = "kube-controller-manager"
)

// The Lease a writing kubectl hpa run holds: named RunLeaseName in the namespace it watches, or
// in RunLeaseNamespace when it runs in the cluster as deploy/ installs it (with -A).
const (
	RunLeaseName      = "kubectl-hpa"
	RunLeaseNamespace = "kubectl-hpa"
)

// ResizeEvents selects, on the server, the Deployment controller's events that say how a
// namespace's Deployments' ReplicaSets were resized: the size a target had before a rescale.
const ResizeEvents = "involvedObject.kind=Deployment,reason=ScalingReplicaSet"

// maxWindow is the longest stabilization window the API accepts (3600 s): a seed older than
// that holds nothing.
const maxWindow = time.Hour

// Leader is who holds a leader Lease (Lease, as namespace/name) and since when, as the Lease
// says. A new holder starts with an empty memory: it seeds every HPA at its first sync and has
// seen no rescale.
type Leader struct {
	Lease       string
	Holder      string
	Since       time.Time
	Transitions int32
	// Renewed and Duration say until when the holder holds it: a holder that stopped
	// releases it (no holder) or lets it expire.
	Renewed  time.Time
	Duration time.Duration
}

// HeldAt says whether the holder still holds the Lease at now.
func (l *Leader) HeldAt(now time.Time) bool {
	return l != nil && l.Holder != "" && !l.Renewed.Add(l.Duration).Before(now)
}

// Leases reads leader Leases, each once for all the HPAs of a command.
type Leases struct {
	// Get reads one Lease.
	Get func(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)

	mu   sync.Mutex
	read map[string]*leaseRead
}

type leaseRead struct {
	once   sync.Once
	leader *Leader
	err    error
}

// Leader is the holder of the Lease namespace/name (nil when no such Lease is kept: a
// controller without leader election) or why the Lease could not be read.
func (l *Leases) Leader(ctx context.Context, namespace, name string) (*Leader, error) {
	if l == nil || l.Get == nil {
		return nil, nil
	}
	key := namespace + "/" + name
	l.mu.Lock()
	if l.read == nil {
		l.read = map[string]*leaseRead{}
	}
	r, ok := l.read[key]
	if !ok {
		r = &leaseRead{}
		l.read[key] = r
	}
	l.mu.Unlock()
	r.once.Do(func() {
		lease, err := l.Get(ctx, namespace, name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			r.err = fmt.Errorf("reading the Lease %s: %w", key, err)
		case lease.Spec.AcquireTime == nil:
		default:
			r.leader = &Leader{Lease: key, Since: lease.Spec.AcquireTime.Time}
			if h := lease.Spec.HolderIdentity; h != nil {
				r.leader.Holder = *h
			}
			if n := lease.Spec.LeaseTransitions; n != nil {
				r.leader.Transitions = *n
			}
			if t := lease.Spec.RenewTime; t != nil {
				r.leader.Renewed = t.Time
			}
			if d := lease.Spec.LeaseDurationSeconds; d != nil {
				r.leader.Duration = time.Duration(*d) * time.Second
			}
		}
	})
	return r.leader, r.err
}

// Runs are the Leases a kubectl hpa run deciding namespace's HPAs would hold, as read: the
// namespace's own, then the in-cluster one; err is the first read that failed.
func (l *Leases) Runs(ctx context.Context, namespace string) ([]*Leader, error) {
	namespaces := []string{namespace}
	if namespace != RunLeaseNamespace {
		namespaces = append(namespaces, RunLeaseNamespace)
	}
	leaders := make([]*Leader, len(namespaces))
	errs := make([]error, len(namespaces))
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		wg.Go(func() { leaders[i], errs[i] = l.Leader(ctx, ns, RunLeaseName) })
	}
	wg.Wait()
	var out []*Leader
	for _, x := range leaders {
		if x != nil {
			out = append(out, x)
		}
	}
	return out, errors.Join(errs...)
}

// Memory is what the cluster's HPA controller holds in memory of one HPA, inferred from what
// the cluster keeps, and which evidence says so.
type Memory struct {
	History replicas.History
	// Start is when the controller's memory of the HPA begins (zero: not known), from
	// StartEvidence: the HPA's creation, or the leader's acquisition of its Lease.
	Start         time.Time
	StartEvidence string
	// Seed is the recommendation the controller's first sync of the HPA made, when it can
	// still hold the count; NeverSynced when that first sync is still to come.
	Seed        *Seed
	NeverSynced bool
	// Rescales are the controller's rescales since Start, with the size each came from.
	Rescales []Rescale
	// Controller is who decides the HPA: ControllerManager, or ControllerRun while a kubectl
	// hpa run holds its Lease. Leader is the Lease its memory began with, LeaderErr why a Lease
	// could not be read, TargetErr why the resizes were not read.
	Controller           string
	Leader               *Leader
	LeaderErr, TargetErr error
	// Note says it in a paragraph.
	Note string
}

// Who decides an HPA: kube-controller-manager's HPA controller, or a kubectl hpa run holding
// its Lease (which runs instead of it).
const (
	ControllerManager = "kube-controller-manager"
	ControllerRun     = "kubectl hpa run"
)

// Seed is the first sync's recommendation: the size the target had then.
type Seed struct {
	At       time.Time
	Replicas int32
	Evidence string
}

// Rescale is one rescale the controller made and remembers.
type Rescale struct {
	At time.Time
	To int32
	// From is the size before it, FromEvidence what says so; nil when nothing does (then
	// the change counted is the bound one pod, Direction from the event's reason).
	From         *int32
	FromEvidence string
	Direction    string
}

// Change is the replicas the rescale added (>0) or removed (<0), as far as it is known.
func (r Rescale) Change() int32 {
	if r.From != nil {
		return r.To - *r.From
	}
	if r.Direction == "down" {
		return -1
	}
	return 1
}

// rescale is one SuccessfulRescale as the events show it.
type rescale struct {
	at        time.Time
	to        int32
	direction string
}

// resize is one of a Deployment's ReplicaSets resized by the Deployment controller.
type resize struct {
	at       time.Time
	from, to int32
	text     string
}

var (
	newSizeRE = regexp.MustCompile(`^New size: (\d+); reason: (.*)$`)
	resizeRE  = regexp.MustCompile(`^Scaled (?:up|down) replica set (\S+) from (\d+) to (\d+)$`)
)

// rescalesOf are the rescales the HPA's events show, oldest first, at most now: an event the
// recorder aggregated (the same message again) is a rescale at its first and at its last time.
func rescalesOf(events []corev1.Event, now time.Time) []rescale {
	var out []rescale
	for _, ev := range events {
		m := newSizeRE.FindStringSubmatch(ev.Message)
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			continue
		}
		r := rescale{to: int32(n), direction: directionOfReason(m[2])}
		last := earliest(EventTime(ev), now)
		if first := ev.FirstTimestamp.Time; ev.Count > 1 && !first.IsZero() && first.Before(last) {
			r.at = first
			out = append(out, r)
		}
		r.at = last
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// directionOfReason is the way a rescale went by the reason upstream gives it: a metric
// "above target" or "below Spec.MinReplicas" scales up, "All metrics below target" or "above
// Spec.MaxReplicas" down.
func directionOfReason(reason string) string {
	switch {
	case strings.Contains(reason, "above Spec.MaxReplicas"), strings.Contains(reason, "below target"):
		return "down"
	case strings.Contains(reason, "below Spec.MinReplicas"), strings.Contains(reason, "above target"):
		return "up"
	}
	return ""
}

// resizesOf are the Deployment controller's resizes of ref's ReplicaSets, when ref is a
// Deployment.
func resizesOf(events []corev1.Event, ref autoscalingv2.CrossVersionObjectReference, now time.Time) []resize {
	if !isDeployment(ref) {
		return nil
	}
	var out []resize
	for _, ev := range events {
		if ev.InvolvedObject.Kind != "Deployment" || ev.InvolvedObject.Name != ref.Name || ev.Reason != "ScalingReplicaSet" {
			continue
		}
		m := resizeRE.FindStringSubmatch(ev.Message)
		if m == nil {
			continue
		}
		from, err1 := strconv.ParseInt(m[2], 10, 32)
		to, err2 := strconv.ParseInt(m[3], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, resize{at: earliest(EventTime(ev), now), from: int32(from), to: int32(to), text: ev.Message})
	}
	return out
}

// resizeSlack is how far apart the HPA's event and the Deployment's can be for one rescale:
// the Deployment controller resizes the ReplicaSet as soon as it sees the new spec, and events
// are kept to the second.
const resizeSlack = 3 * time.Second

// resizeLag is how long after a rescale the Deployment controller may still resize the
// ReplicaSet for it: while it is not running (kube-controller-manager restarting, its leader
// election under way, while a kubectl hpa run rescales), it resizes on its return, from the
// size the rescale came from, unless another rescale came first.
const resizeLag = 2 * time.Minute

// fromOf is the size before the rescale r as the Deployment's events say it: the resize of a
// ReplicaSet to r's size nearest r's time, at most resizeLag after it and before the next
// rescale (at until; zero when none came). A Deployment in the middle of a rollout splits a
// resize between ReplicaSets, and none of them reaches the new size: then nothing is said.
func fromOf(r rescale, until time.Time, resizes []resize) (int32, string, bool) {
	var best *resize
	for i, z := range resizes {
		if z.to != r.to || z.from == z.to {
			continue
		}
		d := z.at.Sub(r.at)
		late := d > resizeSlack && d <= resizeLag && (until.IsZero() || z.at.Before(until))
		if d.Abs() > resizeSlack && !late {
			continue
		}
		if best == nil || d.Abs() < best.at.Sub(r.at).Abs() {
			best = &resizes[i]
		}
	}
	if best == nil {
		return 0, "", false
	}
	return best.from, fmt.Sprintf("the Deployment's event %q (%s)", best.text, best.at.UTC().Format(time.RFC3339)), true
}

// notResizedYet is the size before the rescale x when the Deployment controller has not acted
// on it yet (it was down, or its leader election under way): x is the latest rescale, recent,
// the Deployment's spec already holds its new size and its status.replicas still another, and
// the resize events were read (none said it). Its pods are then the ones it had before.
func notResizedYet(x rescale, latest bool, ref autoscalingv2.CrossVersionObjectReference, scale *replicas.Scale, targetErr error, now time.Time) (int32, bool) {
	if !latest || scale == nil || targetErr != nil || !isDeployment(ref) {
		return 0, false
	}
	if now.Sub(x.at) > resizeLag || scale.SpecReplicas != x.to || scale.StatusReplicas == x.to {
		return 0, false
	}
	return scale.StatusReplicas, true
}

// isDeployment says whether ref is an apps Deployment, whose controller's events say each
// resize of its ReplicaSets.
func isDeployment(ref autoscalingv2.CrossVersionObjectReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == "apps" && ref.Kind == "Deployment"
}

// neverSynced: the HPA's status was never written (no condition, no observed generation, no
// rescale time), so no controller has synced it; its next sync is its first. An object with no
// creationTimestamp was not read from an API server and says nothing of the kind.
func neverSynced(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	st := hpa.Status
	return !hpa.CreationTimestamp.IsZero() && len(st.Conditions) == 0 && st.ObservedGeneration == nil && st.LastScaleTime == nil
}

// Infer is the cluster controller's memory of hpa at now, from the evidence r holds: scale is
// the target's scale now (nil when it could not be read: status.currentReplicas stands for
// its size).
//
//   - Its memory of the HPA starts at the latest of the HPA's creation and the leader's
//     acquisition of its Lease: the leader forgets nothing else, and an earlier leader's
//     memory is gone.
//   - Its first sync then seeded the recommendations with the size at that time: the size the
//     first rescale since came from, or, with none, the size now. An HPA whose status was never
//     written has no seed yet: the core seeds it, as the controller's next sync will.
//   - Each rescale since is a recommendation of its new size (the raw recommendations between
//     them are not kept anywhere) and, with a behavior, a scale event of the change: from the
//     Deployment's resize of its ReplicaSet at that time, else from the previous rescale, else,
//     for the latest rescale of a Deployment whose controller has not resized it yet, from the
//     pods it still has, else at least one pod in the event's direction.
func (r Events) Infer(hpa *autoscalingv2.HorizontalPodAutoscaler, scale *replicas.Scale, now time.Time) Memory {
	current := hpa.Status.CurrentReplicas
	if scale != nil {
		current = scale.SpecReplicas
	}
	m := Memory{History: replicas.History{Recommendations: []replicas.Recommendation{}}, Controller: ControllerManager, Leader: r.Leader, LeaderErr: r.LeaderErr, TargetErr: r.TargetErr}
	var why []string
	if neverSynced(hpa) {
		m.NeverSynced, m.History.Recommendations = true, nil
		why = append(why, fmt.Sprintf("Its status was never written, so no controller has synced it yet: the first sync seeds the recommendations with the size then (%d now), which holds the count for the stabilization window.", current))
	}
	if !hpa.CreationTimestamp.IsZero() {
		m.Start, m.StartEvidence = hpa.CreationTimestamp.Time, "the HPA's creationTimestamp"
	}
	run := r.heldRun(now)
	switch {
	case run != nil:
		m.Controller, m.Leader, m.LeaderErr = ControllerRun, run, nil
		why = append(why, fmt.Sprintf("A kubectl hpa run holds the Lease %s (%s, renewed %s), so it decides this HPA instead of kube-controller-manager, from its own memory (no history is persisted on the HPA).",
			run.Lease, run.Holder, run.Renewed.UTC().Format(time.RFC3339)))
		if run.Since.After(m.Start) {
			m.Start = run.Since
			m.StartEvidence = fmt.Sprintf("the Lease %s: %s holds it since %s", run.Lease, run.Holder, run.Since.UTC().Format(time.RFC3339))
		}
	case r.LeaderErr != nil:
		why = append(why, fmt.Sprintf("When the controller last started is not known (%v): it is taken to have run since before the HPA existed.", r.LeaderErr))
	case r.LeaderRead && r.Leader == nil:
		why = append(why, fmt.Sprintf("No Lease %s/%s is kept (kube-controller-manager without leader election): a restart leaves no evidence, and the controller is taken to have run since before the HPA existed.", LeaderLeaseNamespace, LeaderLeaseName))
	case r.Leader != nil && r.Leader.Since.After(m.Start):
		m.Start = r.Leader.Since
		m.StartEvidence = fmt.Sprintf("the Lease %s/%s: %s leads since %s", LeaderLeaseNamespace, LeaderLeaseName, r.Leader.Holder, r.Leader.Since.UTC().Format(time.RFC3339))
	}
	if run == nil && r.RunErr != nil {
		why = append(why, fmt.Sprintf("Whether a kubectl hpa run decides it instead is not known (%v): kube-controller-manager is taken to.", r.RunErr))
	}

	all := rescalesOf(r.Events, now)
	var seen []rescale
	for _, x := range all {
		// Events are kept to the second: a rescale in the second the memory started is in it.
		if !x.at.Before(m.Start.Truncate(time.Second)) {
			seen = append(seen, x)
		}
	}
	if forgotten := len(all) - len(seen); forgotten > 0 {
		why = append(why, fmt.Sprintf("%d rescale(s) before %s are not in its memory.", forgotten, m.StartEvidence))
	}
	resizes := resizesOf(r.TargetEvents, hpa.Spec.ScaleTargetRef, now)
	for i, x := range seen {
		rs := Rescale{At: x.at, To: x.to, Direction: x.direction}
		var until time.Time
		if i+1 < len(seen) {
			until = seen[i+1].at
		}
		if from, ev, ok := fromOf(x, until, resizes); ok {
			rs.From, rs.FromEvidence = &from, ev
		} else if i > 0 {
			from := seen[i-1].to
			rs.From, rs.FromEvidence = &from, fmt.Sprintf("the previous rescale (New size: %d at %s)", from, seen[i-1].at.UTC().Format(time.RFC3339))
		} else if from, ok := notResizedYet(x, i == len(seen)-1, hpa.Spec.ScaleTargetRef, scale, r.TargetErr, now); ok {
			rs.From, rs.FromEvidence = &from, fmt.Sprintf("the Deployment's status.replicas (%d): its controller has not resized it to %d yet (no ScalingReplicaSet event)", from, x.to)
		}
		if rs.From != nil && rs.Direction == "" {
			rs.Direction = map[bool]string{true: "up", false: "down"}[*rs.From < rs.To]
		}
		m.Rescales = append(m.Rescales, rs)
	}

	if !m.NeverSynced && !m.Start.IsZero() && now.Sub(m.Start) < maxWindow {
		seed := &Seed{At: m.Start, Replicas: current, Evidence: "no rescale since: the size now"}
		switch {
		case len(m.Rescales) == 0:
		case m.Rescales[0].From != nil:
			seed.Replicas, seed.Evidence = *m.Rescales[0].From, "the size the first rescale since came from, by "+m.Rescales[0].FromEvidence
		default:
			seed = nil
			why = append(why, "The size its first sync seeded is not known (the first rescale since does not say what it came from), so no seed is counted.")
		}
		if seed != nil {
			m.Seed = seed
			m.History.Recommendations = append(m.History.Recommendations, replicas.Recommendation{Replicas: seed.Replicas, Timestamp: seed.At})
			why = append(why, fmt.Sprintf("Its memory of the HPA starts at %s (%s), whose first sync seeded the recommendations with %d (%s).",
				seed.At.UTC().Format(time.RFC3339), m.StartEvidence, seed.Replicas, seed.Evidence))
		}
	}
	if !m.NeverSynced {
		for _, rs := range m.Rescales {
			m.History.Recommendations = append(m.History.Recommendations, replicas.Recommendation{Replicas: rs.To, Timestamp: rs.At})
		}
	}
	fromLastScale := false
	if lst := hpa.Status.LastScaleTime; lst != nil && !lst.Time.Before(m.Start.Truncate(time.Second)) && (len(seen) == 0 || lst.Time.Sub(seen[len(seen)-1].at) > time.Second) {
		// A rescale whose event has expired or was not visible: its size is the one the
		// controller has seen since (status.currentReplicas), the best available estimate.
		m.History.Recommendations = append(m.History.Recommendations, replicas.Recommendation{Replicas: hpa.Status.CurrentReplicas, Timestamp: lst.Time})
		fromLastScale = true
	}
	bound := 0
	if hpa.Spec.Behavior != nil {
		// Upstream keeps scale events only for an HPA with a behavior.
		m.History.ScaleUpEvents, m.History.ScaleDownEvents = scaleEvents(m.Rescales, nil)
		for _, rs := range m.Rescales {
			if rs.From == nil {
				bound++
			}
		}
	}
	var b strings.Builder
	b.WriteString("The cluster's HPA controller keeps its recommendations and rescales in its own memory; this history is inferred from what the cluster keeps. ")
	b.WriteString(strings.Join(why, " "))
	if len(why) > 0 {
		b.WriteString(" ")
	}
	switch {
	case len(seen) == 0 && !fromLastScale:
		b.WriteString("No rescale is visible (SuccessfulRescale events, status.lastScaleTime)")
		if !m.Start.IsZero() {
			b.WriteString(" since")
		}
		b.WriteString(".")
	default:
		fmt.Fprintf(&b, "%d SuccessfulRescale event(s)", len(seen))
		if !m.Start.IsZero() {
			b.WriteString(" since")
		}
		if fromLastScale {
			b.WriteString(" and status.lastScaleTime (with status.currentReplicas as its size)")
		}
		b.WriteString(" count as recommendations of their new sizes")
		if hpa.Spec.Behavior != nil && len(m.Rescales) > 0 {
			b.WriteString(", and their changes as scale events for the policies")
			if bound > 0 {
				fmt.Fprintf(&b, " (%d whose old size nothing says counted as one pod, the least it changed)", bound)
			}
		}
		b.WriteString(". Recommendations made between rescales are not kept anywhere, so the cluster's stabilization window may hold a different value.")
	}
	m.Note = b.String()
	return m
}

// heldRun is the first of the run Leases still held at now: a kubectl hpa run decides the HPA.
func (r Events) heldRun(now time.Time) *Leader {
	for _, l := range r.Runs {
		if l.HeldAt(now) {
			return l
		}
	}
	return nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// scaleEvents are the rescales as the controller's scale events: each change from the size it
// came from, or, where nothing says it, what largest gives (nil: one pod, the least).
func scaleEvents(rescales []Rescale, largest func(Rescale) int32) (up, down []replicas.ScaleEvent) {
	for _, rs := range rescales {
		c := rs.Change()
		if rs.From == nil && largest != nil {
			c = largest(rs)
		}
		switch {
		case c > 0:
			up = append(up, replicas.ScaleEvent{ReplicaChange: c, Timestamp: rs.At})
		case c < 0:
			down = append(down, replicas.ScaleEvent{ReplicaChange: -c, Timestamp: rs.At})
		}
	}
	return up, down
}

// Alternative is a memory the evidence does not rule out, beside the one decided under: what it
// leaves open (Open) and the history at the other end of it.
type Alternative struct {
	Open    string
	History replicas.History
}

// Alternatives are the memories the evidence leaves open for hpa beside m: with a behavior,
// every rescale whose old size nothing says counted at the most it can have changed (up from
// minReplicas, down from maxReplicas) instead of one pod.
func (m Memory) Alternatives(hpa *autoscalingv2.HorizontalPodAutoscaler) []Alternative {
	if hpa.Spec.Behavior == nil {
		return nil
	}
	lowest := int32(1)
	if hpa.Spec.MinReplicas != nil {
		lowest = max(*hpa.Spec.MinReplicas, 1)
	}
	largest := func(rs Rescale) int32 {
		if rs.Direction == "down" {
			return -max(hpa.Spec.MaxReplicas-rs.To, 1)
		}
		return max(rs.To-lowest, 1)
	}
	var open []string
	for _, rs := range m.Rescales {
		if rs.From != nil {
			continue
		}
		from, bound := rs.To-largest(rs), "minReplicas"
		if rs.Direction == "down" {
			bound = "maxReplicas"
		}
		open = append(open, fmt.Sprintf("the rescale to %d at %s came from %d (%s) rather than %d", rs.To, rs.At.UTC().Format(time.RFC3339), from, bound, rs.To-rs.Change()))
	}
	if len(open) == 0 {
		return nil
	}
	h := m.History
	h.ScaleUpEvents, h.ScaleDownEvents = scaleEvents(m.Rescales, largest)
	return []Alternative{{Open: strings.Join(open, " and ") + ": no event says what it came from", History: h}}
}
