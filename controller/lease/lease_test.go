package lease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
)

const ns = "default"

func TestConfigValidateRefusesTimingsTheElectorCannotKeep(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero values take kube-controller-manager's defaults", Config{}, ""},
		{"short timings for tests", Config{LeaseDuration: 3 * time.Second, RenewDeadline: time.Second, RetryPeriod: 250 * time.Millisecond}, ""},
		{"a lease shorter than a second cannot be stored", Config{LeaseDuration: 900 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, "at least 1s"},
		{"the lease must outlast the renew deadline", Config{LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second}, "greater than the renew deadline"},
		{"the renew deadline must allow a jittered retry", Config{LeaseDuration: 10 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}, "times the retry period"},
		{"the holder must stop writing before a standby may take over", Config{LeaseDuration: 5 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 1500 * time.Millisecond}, "plus the retry period"},
		// A standby compares the Lease's record as stored, renewTime to the second: renewals
		// within one second look alike to it, so it may count the lease duration from up to
		// a second before the holder's last renewal.
		{"a standby may take over a second early, so the holder must stop a second sooner", Config{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}, "plus 1s"},
		{"kube-controller-manager's timings less their 2s to spare are refused", Config{LeaseDuration: 15 * time.Second, RenewDeadline: 12 * time.Second, RetryPeriod: 2 * time.Second}, "plus 1s"},
		{"the lease duration counts in whole seconds, as the Lease stores it", Config{LeaseDuration: 3900 * time.Millisecond, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond}, "3s in whole seconds"},
		{"a negative retry period", Config{RetryPeriod: -time.Second}, "must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunTermsRefusesAnInvalidTimingBeforeRunning(t *testing.T) {
	called := false
	err := RunTerms(context.Background(), fake.NewClientset(), Config{Namespace: ns, Name: "kubectl-hpa", Identity: "me", LeaseDuration: time.Second, RenewDeadline: time.Second},
		func(context.Context, Term) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("RunTerms with lease duration = renew deadline: err %v, run called %v; want an error and no run", err, called)
	}
}

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// termLog records what the run of each term did, in order.
type termLog struct {
	mu     sync.Mutex
	events []string
}

func (l *termLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *termLog) has(e string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.events, e)
}

func (l *termLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// waitFor polls cond; the test's own deadline bounds it.
// waitFor fails the test if cond does not hold within 30s (the lease timings are seconds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunTermsStopsWritingWhenTheLeaseIsLostAndResumesWhenReacquired(t *testing.T) {
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	cases := []struct {
		name string
		// failVerbs fail with failErr during the fault.
		failVerbs []string
		failErr   error
		// takeOver, if set, is what another instance writes into the Lease as the fault begins.
		takeOver        *coordinationv1.Lease
		wantReason      []string
		wantTransitions int32
	}{
		{
			name:      "the API server away past the renew deadline: the same identity takes the Lease back",
			failVerbs: []string{"get", "update", "create"}, failErr: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"),
			wantReason:      []string{"renewing it failed for the renew deadline (1s)", "connection refused"},
			wantTransitions: 0,
		},
		{
			name:      "another instance took the Lease: run waits until it expires, then takes it over",
			failVerbs: []string{"update"}, failErr: apierrors.NewConflict(leases.GroupResource(), "kubectl-hpa", errors.New("the object has been modified")),
			takeOver: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubectl-hpa"}, Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](2), LeaseTransitions: ptr.To[int32](1),
				AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}},
			wantReason:      []string{"another instance, other, now holds it"},
			wantTransitions: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			var failing atomic.Bool
			kube.PrependReactor("*", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if failing.Load() && slices.Contains(tc.failVerbs, a.GetVerb()) {
					return true, nil, tc.failErr
				}
				return false, nil, nil
			})
			var logs lockedBuffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()

			var log termLog
			terms := 0
			var leadings []context.Context
			done := make(chan error, 1)
			go func() {
				done <- RunTerms(ctx, kube, Config{Namespace: ns, Name: "kubectl-hpa", Identity: "me",
					LeaseDuration: 3 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
					OnLost: func(reason string) { log.add("lost: " + reason) }},
					func(ctx context.Context, term Term) error {
						terms++
						n := terms
						leadings = append(leadings, term.Leading)
						log.add(fmt.Sprintf("start %d", n))
						for {
							// A write is attempted only while run's context is live, as the
							// controller's are.
							select {
							case <-ctx.Done():
								log.add(fmt.Sprintf("end %d", n))
								return nil
							case <-time.After(20 * time.Millisecond):
								log.add(fmt.Sprintf("write %d", n))
							}
						}
					})
			}()
			waitFor(t, "term 1's first write", func() bool { return log.has("write 1") })
			// Under the fake's lock no renewal of ours is half done while the fault begins.
			kube.Lock()
			failing.Store(true)
			if tc.takeOver != nil {
				if err := kube.Tracker().Update(leases, tc.takeOver, ns); err != nil {
					kube.Unlock()
					t.Fatal(err)
				}
			}
			kube.Unlock()
			log.add("fault")
			waitFor(t, "term 1 to end", func() bool { return log.has("end 1") })
			if err := leadings[0].Err(); err == nil {
				t.Error("term 1 ended with its Leading context live")
			}
			// Let the new campaign try a few times while the fault lasts.
			time.Sleep(500 * time.Millisecond)
			failing.Store(false)
			log.add("fault over")
			waitFor(t, "term 2's first write", func() bool { return log.has("write 2") })

			lease, err := kube.CoordinationV1().Leases(ns).Get(context.Background(), "kubectl-hpa", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ptrValue(lease.Spec.HolderIdentity); got != "me" {
				t.Errorf("holder after the fault = %q, want me", got)
			}
			if got := ptrValue(lease.Spec.LeaseTransitions); got != tc.wantTransitions {
				t.Errorf("leaseTransitions after the fault = %d, want %d", got, tc.wantTransitions)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("RunTerms after cancel: %v", err)
			}

			events := log.snapshot()
			fault, end1, over, start2 := slices.Index(events, "fault"), slices.Index(events, "end 1"), slices.Index(events, "fault over"), slices.Index(events, "start 2")
			if !(fault < end1 && end1 < over && over < start2) {
				t.Errorf("events %v: want the fault, then term 1's end, then the fault over, then term 2", events)
			}
			for _, e := range events[end1+1 : start2] {
				if strings.HasPrefix(e, "write") {
					t.Errorf("events %v: %q between losing the lease and reacquiring it", events, e)
				}
			}
			// Why leadership ended is OnLost's to tell, once; the log at -v 0 has errors only.
			var lost []string
			for _, e := range log.snapshot() {
				if r, ok := strings.CutPrefix(e, "lost: "); ok {
					lost = append(lost, r)
				}
			}
			if len(lost) != 1 {
				t.Fatalf("OnLost told %q, want one reason", lost)
			}
			for _, w := range tc.wantReason {
				if !strings.Contains(lost[0], w) {
					t.Errorf("OnLost's reason %q does not contain %q", lost[0], w)
				}
			}
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.HasPrefix(l, "I") {
					t.Errorf("an info line at -v 0 (run's output says what the Lease does): %s", l)
				}
			}
		})
	}
}

func TestFenceConfigEndsRequestsWithTheTerm(t *testing.T) {
	arrived := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	leading, endTerm := context.WithCancel(context.Background())
	defer endTerm()
	rt, err := rest.TransportFor(FenceConfig(leading, &rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	do := func(path string) error {
		req, err := http.NewRequest(http.MethodPut, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := do("/ok"); err != nil {
		t.Fatalf("a request while leading: %v", err)
	}
	<-arrived
	inFlight := make(chan error, 1)
	go func() { inFlight <- do("/slow") }()
	<-arrived
	endTerm()
	if err := <-inFlight; !errors.Is(err, errNotLeading) {
		t.Errorf("a request in flight when the term ended: %v, want it cancelled with %v", err, errNotLeading)
	}
	if err := do("/ok"); !errors.Is(err, errNotLeading) {
		t.Errorf("a request after the term: %v, want %v", err, errNotLeading)
	}
	select {
	case <-arrived:
		t.Error("a request after the term reached the server")
	default:
	}
}

// TestRunTermsTellsAStandbyWhoHoldsTheLeaseAndSinceWhen: a standby is told the holder and
// its acquire time, then that it acquired the Lease once the holder released it, and its term
// when the previous holder was last seen (the release), which bounds the history it recorded.
func TestRunTermsTellsAStandbyWhoHoldsTheLeaseAndSinceWhen(t *testing.T) {
	since := metav1.NewMicroTime(time.Now().Add(-5 * time.Minute).Truncate(time.Second))
	duration := int32(60)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubectl-hpa"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: &duration,
			AcquireTime: &since, RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}}
	kube := fake.NewClientset(lease)
	type waiting struct {
		holder string
		since  time.Time
	}
	waits := make(chan waiting, 10)
	acquired := make(chan struct{}, 10)
	cfg := Config{Namespace: ns, Name: "kubectl-hpa", Identity: "me", LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		OnWaiting:  func(holder string, since time.Time) { waits <- waiting{holder, since} },
		OnAcquired: func() { acquired <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	terms := make(chan Term, 1)
	go func() {
		done <- RunTerms(ctx, kube, cfg, func(ctx context.Context, term Term) error { terms <- term; <-ctx.Done(); return nil })
	}()
	select {
	case w := <-waits:
		if w.holder != "other" || !w.since.Equal(since.Time) {
			t.Errorf("told %q since %v, want %q since %v", w.holder, w.since, "other", since.Time)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the standby was never told who holds the Lease")
	}
	// The holder releases the Lease as run does on stop.
	released := lease.DeepCopy()
	released.Spec.HolderIdentity = ptr.To("")
	released.Spec.LeaseDurationSeconds = ptr.To(int32(1))
	releasedAt := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	released.Spec.RenewTime = &releasedAt
	if _, err := kube.CoordinationV1().Leases(ns).Update(ctx, released, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-acquired:
	case <-time.After(30 * time.Second):
		t.Fatal("the standby was never told it acquired the Lease")
	}
	if term := <-terms; !term.PreviousHolderSeen.Equal(releasedAt.Time) {
		t.Errorf("term says the previous holder was last seen at %v, want its release at %v", term.PreviousHolderSeen, releasedAt.Time)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunTerms: %v", err)
	}
}

func TestRunTermsReleasesTheLeaseOnStop(t *testing.T) {
	kube := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- RunTerms(ctx, kube, Config{Namespace: ns, Name: "kubectl-hpa", Identity: "me", ReleaseTimeout: time.Minute}, func(ctx context.Context, _ Term) error {
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
		t.Errorf("RunTerms after cancel: %v", err)
	}
	lease, err = kube.CoordinationV1().Leases(ns).Get(context.Background(), "kubectl-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptrValue(lease.Spec.HolderIdentity); got != "" {
		t.Errorf("holder after stop = %q, want the lease released", got)
	}
}

func TestRunTermsStopsWhileWaiting(t *testing.T) {
	kube := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Whether or not the elector won the race to acquire, it must return without error.
	if err := RunTerms(ctx, kube, Config{Namespace: ns, Name: "kubectl-hpa", Identity: "me"}, func(context.Context, Term) error {
		return nil
	}); err != nil {
		t.Errorf("RunTerms with a cancelled context: %v", err)
	}
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
