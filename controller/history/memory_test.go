package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

var memNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return memNow.Add(-d) }

func rescaleEvent(to int32, reason string, at time.Time) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: "web"},
		Reason:         "SuccessfulRescale",
		Message:        fmt.Sprintf("New size: %d; reason: %s", to, reason),
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
	}
}

func resizeEvent(deployment string, from, to int32, at time.Time) corev1.Event {
	way := "up"
	if to < from {
		way = "down"
	}
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: deployment},
		Reason:         "ScalingReplicaSet",
		Message:        fmt.Sprintf("Scaled %s replica set %s-5d8f from %d to %d", way, deployment, from, to),
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
	}
}

const up, down = "cpu resource utilization (percentage of request) above target", "All metrics below target"

func synced(opts ...testbuild.HPAOption) []testbuild.HPAOption {
	return append([]testbuild.HPAOption{
		testbuild.Target("apps/v1", "Deployment", "web"),
		testbuild.Conditions(autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue}),
	}, opts...)
}

func created(t time.Time) testbuild.HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.CreationTimestamp = metav1.NewTime(t) }
}

var podsPer60s = testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
	ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
})

// TestMemoryIsInferredFromTheClustersEvidence holds each inference to the controller's memory
// the evidence proves: when it began (the HPA's creation, the leader's Lease), its seed, and
// the changes of the rescales since.
func TestMemoryIsInferredFromTheClustersEvidence(t *testing.T) {
	leader := &Leader{Holder: "cp-1_abc", Since: ago(2 * time.Minute), Transitions: 3}
	tests := []struct {
		name    string
		hpa     *autoscalingv2.HorizontalPodAutoscaler
		events  Events
		current int32
		// observed is the target's status.replicas (0: as current).
		observed int32
		want     replicas.History
		// seed is the inferred seed's evidence, "" for none.
		seed string
	}{
		{
			name:    "an HPA whose status was never written is seeded by its next sync, its first",
			hpa:     testbuild.HPA("shop", "web", created(ago(20*time.Second))),
			current: 6,
			want:    replicas.History{},
		},
		{
			name:    "an HPA created inside the window was seeded at its creation with the size now when it has not rescaled since",
			hpa:     testbuild.HPA("shop", "web", synced(created(ago(40*time.Second)))...),
			current: 6,
			want:    replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(40 * time.Second)}}},
			seed:    "no rescale since: the size now",
		},
		{
			name:    "an HPA created over an hour ago carries no seed",
			hpa:     testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)))...),
			current: 6,
			want:    replicas.History{Recommendations: []replicas.Recommendation{}},
		},
		{
			name: "a new leader seeds every HPA when it takes the Lease and has forgotten the rescales before",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{Leader: leader, Events: []corev1.Event{
				rescaleEvent(6, up, ago(4*time.Minute)),
			}},
			current: 6,
			want:    replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: leader.Since}}},
			seed:    "no rescale since: the size now",
		},
		{
			name: "a rescale inside the policy's period counts its change from the Deployment's resize of its ReplicaSet",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{
				Events:       []corev1.Event{rescaleEvent(6, up, ago(30*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 4, 6, ago(29*time.Second)), resizeEvent("other", 2, 6, ago(30*time.Second))},
			},
			current: 6,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(30 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: ago(30 * time.Second)}},
			},
		},
		{
			name: "the first rescale after the leader's start gives the seed the size it came from",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{
				Leader:       leader,
				Events:       []corev1.Event{rescaleEvent(6, up, ago(30*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 4, 6, ago(30*time.Second))},
			},
			current: 6,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: leader.Since}, {Replicas: 6, Timestamp: ago(30 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: ago(30 * time.Second)}},
			},
			seed: `the size the first rescale since came from, by the Deployment's event "Scaled up replica set web-5d8f from 4 to 6" (2026-12-07T11:59:30Z)`,
		},
		{
			name: "a rescale made while the Deployment controller was away counts its change from the resize it made on its return",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{
				Events:       []corev1.Event{rescaleEvent(8, up, ago(40*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 6, 8, ago(22*time.Second))},
			},
			current: 8,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 8, Timestamp: ago(40 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: ago(40 * time.Second)}},
			},
		},
		{
			name: "a resize after the next rescale is not the earlier rescale's",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{
				Events:       []corev1.Event{rescaleEvent(8, up, ago(50*time.Second)), rescaleEvent(9, up, ago(40*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 5, 8, ago(30*time.Second))},
			},
			current: 9,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 8, Timestamp: ago(50 * time.Second)}, {Replicas: 9, Timestamp: ago(40 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: ago(50 * time.Second)}, {ReplicaChange: 1, Timestamp: ago(40 * time.Second)}},
			},
		},
		{
			name: "a later rescale counts its change from the one before it",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{Events: []corev1.Event{
				rescaleEvent(9, down, ago(20*time.Second)), rescaleEvent(10, up, ago(50*time.Second)),
			}, TargetEvents: []corev1.Event{resizeEvent("web", 7, 10, ago(50*time.Second))}},
			current: 9,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 10, Timestamp: ago(50 * time.Second)}, {Replicas: 9, Timestamp: ago(20 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 3, Timestamp: ago(50 * time.Second)}},
				ScaleDownEvents: []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: ago(20 * time.Second)}},
			},
		},
		{
			name: "a rescale whose old size nothing says counts one pod in its reason's direction, the least it changed",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{Events: []corev1.Event{rescaleEvent(3, down, ago(30*time.Second))},
				TargetErr: apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no"))},
			current: 3,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 3, Timestamp: ago(30 * time.Second)}},
				ScaleDownEvents: []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: ago(30 * time.Second)}},
			},
		},
		{
			name: "a rescale the event recorder aggregated counts at its first and its last time",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{Events: []corev1.Event{func() corev1.Event {
				ev := rescaleEvent(6, up, ago(10*time.Second))
				ev.FirstTimestamp, ev.Count = metav1.NewTime(ago(40*time.Second)), 2
				return ev
			}()}, TargetEvents: []corev1.Event{resizeEvent("web", 4, 6, ago(40*time.Second))}},
			current: 6,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(40 * time.Second)}, {Replicas: 6, Timestamp: ago(10 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: ago(40 * time.Second)}},
			},
		},
		{
			name: "a rescale the Deployment controller has not acted on yet came from the size its pods still have",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events: Events{Events: []corev1.Event{rescaleEvent(8, up, ago(20*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 4, 6, ago(5*time.Minute))}},
			current: 8, observed: 6,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 8, Timestamp: ago(20 * time.Second)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: ago(20 * time.Second)}},
			},
		},
		{
			name:    "the pods' count says nothing of a rescale older than the Deployment controller's longest lag",
			hpa:     testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...),
			events:  Events{Events: []corev1.Event{rescaleEvent(8, up, ago(3*time.Minute))}},
			current: 8, observed: 6,
			want: replicas.History{
				Recommendations: []replicas.Recommendation{{Replicas: 8, Timestamp: ago(3 * time.Minute)}},
				ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: ago(3 * time.Minute)}},
			},
		},
		{
			name: "without a behavior the controller keeps no scale events",
			hpa:  testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)))...),
			events: Events{Events: []corev1.Event{rescaleEvent(6, up, ago(30*time.Second))},
				TargetEvents: []corev1.Event{resizeEvent("web", 4, 6, ago(30*time.Second))}},
			current: 6,
			want:    replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(30 * time.Second)}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scale := &replicas.Scale{SpecReplicas: tc.current, StatusReplicas: tc.current}
			if tc.observed != 0 {
				scale.StatusReplicas = tc.observed
			}
			m := tc.events.Infer(tc.hpa, scale, memNow)
			if diff := cmp.Diff(tc.want, m.History); diff != "" {
				t.Errorf("history (-want +got):\n%s\nnote: %s", diff, m.Note)
			}
			got := ""
			if m.Seed != nil {
				got = m.Seed.Evidence
			}
			if got != tc.seed {
				t.Errorf("seed evidence %q, want %q", got, tc.seed)
			}
		})
	}
}

// TestEachLeaseIsReadOnceAndItsAbsenceIsNoError: a controller without leader election keeps
// no Lease, which says nothing of its start; a forbidden read is said.
func TestEachLeaseIsReadOnceAndItsAbsenceIsNoError(t *testing.T) {
	since, renewed := metav1.NewMicroTime(ago(time.Minute)), metav1.NewMicroTime(ago(2*time.Second))
	for _, tc := range []struct {
		name    string
		lease   *coordinationv1.Lease
		err     error
		want    *Leader
		wantErr bool
	}{
		{name: "a Lease says who holds it, since when and until when", lease: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("cp-1"), AcquireTime: &since, RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](15), LeaseTransitions: ptr.To[int32](2)}},
			want: &Leader{Lease: "kube-system/kube-controller-manager", Holder: "cp-1", Since: since.Time, Transitions: 2, Renewed: renewed.Time, Duration: 15 * time.Second}},
		{name: "no Lease: no leader election, nothing known", err: apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, LeaderLeaseName)},
		{name: "a forbidden read is an error", err: apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, LeaderLeaseName, errors.New("no")), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			l := &Leases{Get: func(context.Context, string, string) (*coordinationv1.Lease, error) { calls++; return tc.lease, tc.err }}
			for range 3 {
				got, err := l.Leader(context.Background(), LeaderLeaseNamespace, LeaderLeaseName)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error %v, want one: %t", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("leader (-want +got):\n%s", diff)
				}
			}
			if calls != 1 {
				t.Errorf("%d reads of the Lease, want 1", calls)
			}
		})
	}
}

// TestTheRunLeasesAreTheNamespacesAndTheInClusterOne: a kubectl hpa run deciding a namespace's
// HPAs holds kubectl-hpa in that namespace, or kubectl-hpa/kubectl-hpa as deploy/ installs it;
// each is read once for all the namespace's HPAs.
func TestTheRunLeasesAreTheNamespacesAndTheInClusterOne(t *testing.T) {
	since := metav1.NewMicroTime(ago(time.Minute))
	held := map[string]bool{"shop/kubectl-hpa": true, "kubectl-hpa/kubectl-hpa": true}
	var (
		mu    sync.Mutex
		reads []string
	)
	l := &Leases{Get: func(_ context.Context, namespace, name string) (*coordinationv1.Lease, error) {
		key := namespace + "/" + name
		mu.Lock()
		reads = append(reads, key)
		mu.Unlock()
		if !held[key] {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, name)
		}
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(namespace), AcquireTime: &since}}, nil
	}}
	for _, tc := range []struct {
		namespace string
		want      []string
	}{
		{namespace: "shop", want: []string{"shop/kubectl-hpa", "kubectl-hpa/kubectl-hpa"}},
		{namespace: "shop", want: []string{"shop/kubectl-hpa", "kubectl-hpa/kubectl-hpa"}},
		{namespace: "kubectl-hpa", want: []string{"kubectl-hpa/kubectl-hpa"}},
		{namespace: "web", want: []string{"kubectl-hpa/kubectl-hpa"}},
	} {
		runs, err := l.Runs(context.Background(), tc.namespace)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.Lease)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Runs(%s) (-want +got):\n%s", tc.namespace, diff)
		}
	}
	if len(reads) != 3 {
		t.Errorf("Leases read %v, want each of the three once", reads)
	}
}

// TestARunHoldingItsLeaseDecidesFromAMemoryThatBeganWithIt: while a kubectl hpa run holds its
// Lease it decides the namespace's HPAs, and its memory (without a persisted history) began
// when it took the Lease: a restart seeds every HPA then and forgets the rescales before.
// A released or expired Lease leaves kube-controller-manager deciding.
func TestARunHoldingItsLeaseDecidesFromAMemoryThatBeganWithIt(t *testing.T) {
	kcm := &Leader{Lease: "kube-system/kube-controller-manager", Holder: "cp-1", Since: ago(3 * time.Hour), Renewed: ago(time.Second), Duration: 15 * time.Second}
	run := func(lease, holder string, since, renewed time.Duration) *Leader {
		return &Leader{Lease: lease, Holder: holder, Since: ago(since), Renewed: ago(renewed), Duration: 15 * time.Second}
	}
	hpa := testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)), podsPer60s)...)
	rescaled := []corev1.Event{rescaleEvent(6, up, ago(4*time.Minute))}
	// kube-controller-manager's memory began before the rescale: it is a recommendation, and a
	// scale event of at least one pod (outside the 60s policy period, it limits nothing).
	forgotNothing := replicas.History{
		Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(4 * time.Minute)}},
		ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: ago(4 * time.Minute)}},
	}
	for _, tc := range []struct {
		name       string
		runs       []*Leader
		controller string
		want       replicas.History
		evidence   string
	}{
		{name: "a run holding the namespace's Lease seeded the HPA when it took it",
			runs:       []*Leader{run("shop/kubectl-hpa", "laptop_1", time.Minute, 2*time.Second)},
			controller: ControllerRun,
			want:       replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(time.Minute)}}},
			evidence:   "the Lease shop/kubectl-hpa: laptop_1 holds it since 2026-12-07T11:59:00Z"},
		{name: "the in-cluster run's Lease counts as well",
			runs:       []*Leader{run("kubectl-hpa/kubectl-hpa", "kubectl-hpa-5f7_x", 30*time.Second, time.Second)},
			controller: ControllerRun,
			want:       replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 6, Timestamp: ago(30 * time.Second)}}},
			evidence:   "the Lease kubectl-hpa/kubectl-hpa: kubectl-hpa-5f7_x holds it since 2026-12-07T11:59:30Z"},
		{name: "a released Lease (a run that stopped) leaves kube-controller-manager deciding",
			runs:       []*Leader{run("shop/kubectl-hpa", "", time.Minute, 2*time.Second)},
			controller: ControllerManager,
			want:       forgotNothing,
			evidence:   "the HPA's creationTimestamp"},
		{name: "an expired Lease (a run that died) leaves kube-controller-manager deciding",
			runs:       []*Leader{run("shop/kubectl-hpa", "laptop_1", time.Minute, 20*time.Second)},
			controller: ControllerManager,
			want:       forgotNothing,
			evidence:   "the HPA's creationTimestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := Events{LeaderRead: true, Leader: kcm, Runs: tc.runs, Events: rescaled}
			m := ev.Infer(hpa, &replicas.Scale{SpecReplicas: 6, StatusReplicas: 6}, memNow)
			if m.Controller != tc.controller {
				t.Errorf("controller %q, want %q", m.Controller, tc.controller)
			}
			if m.StartEvidence != tc.evidence {
				t.Errorf("start evidence %q, want %q", m.StartEvidence, tc.evidence)
			}
			if diff := cmp.Diff(tc.want, m.History); diff != "" {
				t.Errorf("history (-want +got):\n%s\nnote: %s", diff, m.Note)
			}
		})
	}
}

// TestTheNoteSaysWhenNoLeaseTellsOfARestart: without leader election a restart of the
// controller leaves no evidence; the note says what is assumed instead.
func TestTheNoteSaysWhenNoLeaseTellsOfARestart(t *testing.T) {
	hpa := testbuild.HPA("shop", "web", synced(created(ago(2*time.Hour)))...)
	for _, tc := range []struct {
		name   string
		events Events
		want   string
	}{
		{name: "no Lease kept", events: Events{LeaderRead: true}, want: "No Lease kube-system/kube-controller-manager is kept"},
		{name: "the Lease forbidden", events: Events{LeaderRead: true, LeaderErr: errors.New("forbidden")}, want: "When the controller last started is not known (forbidden)"},
		{name: "a run's Lease forbidden", events: Events{LeaderRead: true, RunErr: errors.New("forbidden")}, want: "Whether a kubectl hpa run decides it instead is not known (forbidden): kube-controller-manager is taken to."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if note := tc.events.Infer(hpa, &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4}, memNow).Note; !strings.Contains(note, tc.want) {
				t.Errorf("note lacks %q:\n%s", tc.want, note)
			}
		})
	}
}
