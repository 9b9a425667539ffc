package eventsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

const ns = "default"

// newHPA is an HPA for events to be about.
func newHPA(name string) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, name, testbuild.UID("uid-"+name))
}

// storedEvents lists the events the fake API server holds as "reason: message xcount".
func storedEvents(t *testing.T, kube *fake.Clientset) []string {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s: %s x%d", e.Reason, e.Message, e.Count))
	}
	slices.Sort(out)
	return out
}

func TestWriterWritesWhatWasRecordedBeforeTheStop(t *testing.T) {
	cases := []struct {
		name string
		// record records on w after the run's context was cancelled.
		record func(w *Writer, hpa *autoscalingv2.HorizontalPodAutoscaler)
		want   []string
	}{
		{
			name: "events recorded after the run's context ended are still written",
			record: func(w *Writer, hpa *autoscalingv2.HorizontalPodAutoscaler) {
				w.Recorder().Event(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: 4; reason: cpu resource utilization (percentage of request) above target")
				w.Recorder().Eventf(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", "conflict %d", 1)
			},
			want: []string{"FailedUpdateStatus: conflict 1 x1", "SuccessfulRescale: New size: 4; reason: cpu resource utilization (percentage of request) above target x1"},
		},
		{
			name: "a repeated event is counted on the one event, as upstream's sink does",
			record: func(w *Writer, hpa *autoscalingv2.HorizontalPodAutoscaler) {
				for range 3 {
					w.Recorder().Event(hpa, corev1.EventTypeWarning, "FailedGetResourceMetric", "no metrics")
				}
			},
			want: []string{"FailedGetResourceMetric: no metrics x3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			ctx, cancel := context.WithCancel(context.Background())
			w := New(ctx, kube, testingclock.NewFakeClock(time.Now()), "horizontal-pod-autoscaler")
			cancel()
			tc.record(w, newHPA("web"))
			flushed := make(chan struct{})
			go func() {
				defer close(flushed)
				w.Flush(context.Background())
			}()
			select {
			case <-flushed:
			case <-time.After(30 * time.Second):
				t.Fatal("flush did not return within 30s")
			}
			if got := storedEvents(t, kube); !slices.Equal(got, tc.want) {
				t.Errorf("stored events %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWriterFlushIsBoundedByItsContext(t *testing.T) {
	cases := []struct {
		name string
		// api answers the event create.
		api func(release <-chan struct{}) error
		// wantDeadline: flush waits until its deadline; otherwise it returns at once.
		wantDeadline bool
	}{
		{name: "an event write the API server holds is waited for until the deadline", api: func(release <-chan struct{}) error { <-release; return nil },
			wantDeadline: true},
		{name: "an API server that cannot be reached is not retried once stopping", api: func(<-chan struct{}) error {
			return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			kube := fake.NewClientset()
			var mu sync.Mutex
			attempts := 0
			kube.PrependReactor("create", "events", func(core.Action) (bool, runtime.Object, error) {
				mu.Lock()
				attempts++
				mu.Unlock()
				return true, nil, tc.api(release)
			})
			w := New(context.Background(), kube, testingclock.NewFakeClock(time.Now()), "horizontal-pod-autoscaler")
			w.Recorder().Event(newHPA("web"), corev1.EventTypeNormal, "SuccessfulRescale", "New size: 4")
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			flushed := make(chan struct{})
			go func() {
				defer close(flushed)
				w.Flush(ctx)
			}()
			select {
			case <-flushed:
			case <-time.After(30 * time.Second):
				t.Fatal("flush did not return within 30s of its 200ms deadline")
			}
			if got := ctx.Err() != nil; got != tc.wantDeadline {
				t.Errorf("flush returned at its deadline: %v, want %v", got, tc.wantDeadline)
			}
			// The retry waits on the fake clock, which does not move: one attempt, and the
			// stop ends the retries.
			mu.Lock()
			defer mu.Unlock()
			if attempts != 1 {
				t.Errorf("%d create attempts, want 1", attempts)
			}
		})
	}
}

func TestWriterDoesNotWaitForEventsTheRecorderDrops(t *testing.T) {
	kube := fake.NewClientset()
	w := New(context.Background(), kube, testingclock.NewFakeClock(time.Now()), "horizontal-pod-autoscaler")
	w.Recorder().Event(newHPA("web"), "Bogus", "Reason", "an event of no known type is dropped by the recorder")
	w.Recorder().Event(nil, corev1.EventTypeNormal, "Reason", "an event about nothing is dropped by the recorder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.Flush(ctx)
	if ctx.Err() != nil {
		t.Error("flush waited for its deadline for events the recorder had dropped")
	}
	if got := storedEvents(t, kube); len(got) != 0 {
		t.Errorf("stored events %q, want none", got)
	}
}

func TestWriterDoesNotResendWhatTheServerRefused(t *testing.T) {
	kube := fake.NewClientset()
	attempts := 0
	kube.PrependReactor("create", "events", func(core.Action) (bool, runtime.Object, error) {
		attempts++
		return true, nil, apierrors.NewForbidden(corev1.Resource("events"), "", errors.New("no"))
	})
	w := New(context.Background(), kube, testingclock.NewFakeClock(time.Now()), "horizontal-pod-autoscaler")
	w.Recorder().Event(newHPA("web"), corev1.EventTypeNormal, "SuccessfulRescale", "New size: 4")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.Flush(ctx)
	if ctx.Err() != nil {
		t.Error("flush waited for its deadline although the server had refused the event")
	}
	if attempts != 1 {
		t.Errorf("%d create attempts, want 1", attempts)
	}
}

// TestWriterCountsTheEventsABurstDrops: a burst larger than the queue, recorded while the
// API server holds the first write, drops what the queue cannot hold. Those are counted as
// dropped, and the stop waits only for the queued ones: it returns at once, not at its
// deadline, with every queued event written.
func TestWriterCountsTheEventsABurstDrops(t *testing.T) {
	const queue, burst = 10, 15
	kube := fake.NewClientset()
	release := make(chan struct{})
	var once sync.Once
	kube.PrependReactor("create", "events", func(core.Action) (bool, runtime.Object, error) {
		once.Do(func() { <-release })
		return false, nil, nil
	})
	var logged bytes.Buffer
	logCtx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logged))))
	w := newWriter(logCtx, kube, testingclock.NewFakeClock(time.Now()), "horizontal-pod-autoscaler", queue)
	for i := range burst {
		w.Recorder().Event(newHPA(fmt.Sprintf("web-%d", i)), corev1.EventTypeNormal, "SuccessfulRescale", "New size: 4")
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.Flush(ctx)
	if ctx.Err() != nil {
		t.Error("flush waited for its deadline for events the burst dropped")
	}
	written := len(storedEvents(t, kube))
	dropped := w.Dropped()
	if written+dropped != burst || dropped == 0 {
		t.Errorf("%d events written and %d dropped, want %d in all, some dropped", written, dropped, burst)
	}
	if written < queue {
		t.Errorf("%d events written, want at least the %d the queue holds", written, queue)
	}
	// The clock did not move: one line for the whole burst.
	if n := strings.Count(logged.String(), "Dropping events"); n != 1 {
		t.Errorf("%d lines say events are dropped, want 1 for one burst:\n%s", n, logged.String())
	}
}
