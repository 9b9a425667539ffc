package list

import (
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

func createdAgo(d time.Duration) testbuild.HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}

// neverWritten clears the status hpa() gives: no controller has synced the HPA.
func neverWritten(h *autoscalingv2.HorizontalPodAutoscaler) {
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
}

// resize is the Deployment controller's event for a resize of deployment's ReplicaSet.
func (c *cluster) resize(namespace, deployment string, from, to int32, ago time.Duration) {
	c.objects = append(c.objects, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.resize.%d", deployment, to), Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: deployment, Namespace: namespace},
		Type:           corev1.EventTypeNormal, Reason: "ScalingReplicaSet", Count: 1,
		Message:        fmt.Sprintf("Scaled up replica set %s-7c9d from %d to %d", deployment, from, to),
		FirstTimestamp: metav1.NewTime(now.Add(-ago)), LastTimestamp: metav1.NewTime(now.Add(-ago))})
}

func (c *cluster) leader(since time.Duration) {
	at := metav1.NewMicroTime(now.Add(-since))
	c.objects = append(c.objects, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-2_0b1c"), AcquireTime: &at, LeaseTransitions: ptr.To[int32](1)}})
}

// TestWouldBeIsTheDecisionUnderTheControllersMemory: list decides as kube-controller-manager
// does with what it holds in memory, inferred from the cluster's evidence: the seed of its first
// sync of an HPA (never synced; created inside the window; every HPA after a new leader took
// the Lease) and the change of a rescale inside a scaling policy's period.
func TestWouldBeIsTheDecisionUnderTheControllersMemory(t *testing.T) {
	podsPer60s := testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
	})
	tests := []struct {
		name       string
		setup      func(c *cluster)
		want       int32
		constraint string
	}{
		{
			name: "an HPA no controller has synced is held at its size by the seed of its first sync",
			setup: func(c *cluster) {
				// 20% of an 80% target asks for 1 of 4.
				c.app("s", "web", 4, "100m", hpa("s", "web", "web", 80, 10, 0, 0, createdAgo(20*time.Second), neverWritten))
			},
			want: 4, constraint: "ScaleDownStabilization",
		},
		{
			name: "an HPA created inside the scale-down window is held by the seed of its first sync",
			setup: func(c *cluster) {
				c.app("s", "web", 4, "100m", hpa("s", "web", "web", 80, 10, 4, 4, createdAgo(40*time.Second)))
			},
			want: 4, constraint: "ScaleDownStabilization",
		},
		{
			name: "an HPA created before the window scales down",
			setup: func(c *cluster) {
				c.app("s", "web", 4, "100m", hpa("s", "web", "web", 80, 10, 4, 4, createdAgo(10*time.Minute)))
			},
			want: 1, constraint: "None",
		},
		{
			name: "every HPA is held by the seed of a leader that took the Lease inside the window",
			setup: func(c *cluster) {
				c.leader(30 * time.Second)
				c.app("s", "web", 4, "100m", hpa("s", "web", "web", 80, 10, 4, 4, createdAgo(10*time.Minute)))
			},
			want: 4, constraint: "ScaleDownStabilization",
		},
		{
			name: "a rescale 4 -> 6 inside a Pods 2 per 60s period holds the count at 6",
			setup: func(c *cluster) {
				// 90% of a 50% target asks for 11 of 6.
				c.app("s", "web", 6, "450m", hpa("s", "web", "web", 50, 20, 6, 6, createdAgo(10*time.Minute), podsPer60s))
				c.rescale("s", "web", 6, 30*time.Second)
				c.resize("s", "web", 4, 6, 30*time.Second)
			},
			want: 6, constraint: "ScaleUpLimit",
		},
		{
			name: "a rescale before the leader took the Lease is forgotten: the policy allows 2 more",
			setup: func(c *cluster) {
				c.leader(20 * time.Second)
				c.app("s", "web", 6, "450m", hpa("s", "web", "web", 50, 20, 6, 6, createdAgo(10*time.Minute), podsPer60s))
				c.rescale("s", "web", 6, 30*time.Second)
				c.resize("s", "web", 4, 6, 30*time.Second)
			},
			want: 8, constraint: "ScaleUpLimit",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{}
			tc.setup(c)
			items := listJSON(t, c, "-n", "s")
			e := items["web"]
			if e == nil || e.Decision == nil || e.Verdict == nil {
				t.Fatalf("no decision for web: %+v", e)
			}
			if e.Decision.DesiredReplicas != tc.want || e.Verdict.Constraint != tc.constraint {
				t.Errorf("WOULD BE %d (%s), want %d (%s); history: %s", e.Decision.DesiredReplicas, e.Verdict.Constraint, tc.want, tc.constraint, e.History.Note)
			}
		})
	}
}

// TestWhereTheEvidenceLeavesTheMemoryOpenWouldBeSaysTheAlternatives: a rescale 6 whose old size
// no event says counts as one pod (4 -> 6 is not known), so the policy allows 5 + 2 = 7; had it
// come from minReplicas, the period would hold the count at 6. WOULD BE says both, -o json
// carries the alternative and what leaves it open.
func TestWhereTheEvidenceLeavesTheMemoryOpenWouldBeSaysTheAlternatives(t *testing.T) {
	podsPer60s := testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
	})
	c := &cluster{}
	c.app("s", "web", 6, "450m", hpa("s", "web", "web", 50, 20, 6, 6, createdAgo(10*time.Minute), podsPer60s))
	c.rescale("s", "web", 6, 30*time.Second)

	e := listJSON(t, c, "-n", "s")["web"]
	if e.Decision.DesiredReplicas != 7 {
		t.Errorf("WOULD BE %d, want 7 (the rescale counted as one pod)", e.Decision.DesiredReplicas)
	}
	if len(e.Verdict.Alternatives) != 1 || e.Verdict.Alternatives[0].DesiredReplicas != 6 ||
		!strings.Contains(e.Verdict.Alternatives[0].If, "the rescale to 6 at 2026-11-30T11:59:30Z came from 1 (minReplicas) rather than 5") {
		t.Errorf("alternatives %+v, want 6 if the rescale's old size was minReplicas", e.Verdict.Alternatives)
	}
	if !strings.Contains(e.Verdict.Sentence, "(6 if the rescale to 6 at ") {
		t.Errorf("the verdict does not say the alternative: %s", e.Verdict.Sentence)
	}
	r := run(t, c.build(t), "-n", "s")
	if !strings.Contains(r.stdout, " 7 or 6 ") {
		t.Errorf("WOULD BE does not say 7 or 6:\n%s", r.stdout)
	}
}
