package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRunReconcilesThroughInformersAndStops runs the whole loop against a fake clientset:
// informers list the HPA and pods, a worker scales the target, and cancelling the context
// makes Run return after its workers have.
func TestRunReconcilesThroughInformersAndStops(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{"web": 2}, &fakeMetrics{cpu: cpuAt(100, "web-1", "web-2")})
	// Objects reach the controller through the informers this time, not the indexers.
	kube := fake.NewClientset(newHPA("web"), webPods()[0], webPods()[1])
	reports := make(chan Report, 10)
	var once sync.Once
	c, err := New(DefaultOptions(), Deps{Kube: kube, Scales: &ScaleClient{Scales: f.scales, Mapper: testMapper()},
		Metrics: f.metrics, Recorder: f.recorder, Clock: f.clock, Sink: func(r Report) { once.Do(func() { reports <- r }) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()

	r := <-reports
	if r.Decision.DesiredReplicas != 4 || !r.ScaleWritten || !r.StatusWritten {
		t.Errorf("first report: desired %d, scale written %v, status written %v; want 4, true, true",
			r.Decision.DesiredReplicas, r.ScaleWritten, r.StatusWritten)
	}
	if err := c.Healthz(); err != nil {
		t.Errorf("healthz while running: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	if err := c.Healthz(); err == nil {
		t.Error("healthz after stop reports healthy")
	}
	stored, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.DesiredReplicas != 4 {
		t.Errorf("stored desired replicas = %d, want 4", stored.Status.DesiredReplicas)
	}
}

func TestWritesAreAbandonedOnceStopping(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		&fakeMetrics{cpu: cpuAt(100, "web-1", "web-2")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := f.c.writeGuarded(ctx, func(context.Context) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("write after stop: called %v, err %v; want not called and an error", called, err)
	}
}

func TestRunWithLeaseReleasesTheLeaseOnStop(t *testing.T) {
	kube := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- RunWithLease(ctx, kube, LeaseConfig{Namespace: ns, Name: "kubectl-hpa", Identity: "me", ReleaseTimeout: time.Minute}, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return nil
		})
	}()
	<-started
	lease, err := kube.CoordinationV1().Leases(ns).Get(context.Background(), "kubectl-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptrValue(lease.Spec.HolderIdentity); got != "me" {
		t.Errorf("holder while running = %q, want me", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunWithLease after cancel: %v", err)
	}
	lease, err = kube.CoordinationV1().Leases(ns).Get(context.Background(), "kubectl-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptrValue(lease.Spec.HolderIdentity); got != "" {
		t.Errorf("holder after stop = %q, want the lease released", got)
	}
}

func TestRunWithLeaseStopsWhileWaiting(t *testing.T) {
	kube := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Whether or not the elector won the race to acquire, it must return without error.
	if err := RunWithLease(ctx, kube, LeaseConfig{Namespace: ns, Name: "kubectl-hpa", Identity: "me"}, func(context.Context) error {
		return nil
	}); err != nil {
		t.Errorf("RunWithLease with a cancelled context: %v", err)
	}
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
