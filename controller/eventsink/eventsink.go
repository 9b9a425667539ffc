// Package eventsink writes the controller's events to the API server and lets a stop wait
// until the events already recorded are written.
package eventsink

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// eventTries and eventRetryWait are upstream's: 12 tries, 10s apart (the first wait jittered).
const (
	eventTries     = 12
	eventRetryWait = 10 * time.Second
)

// Writer sends the controller's events to the API server as client-go's broadcaster
// sink does (correlation, aggregation, the spam filter, retries while the server is
// away), but it knows which recorded events are not written yet, so a stop can wait for
// them: the events of a decision whose writes finish during the stop's grace are
// written too, not dropped with the broadcaster.
type Writer struct {
	kube       kubernetes.Interface
	clock      clock.Clock
	correlator *record.EventCorrelator

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	mu        sync.Mutex
	pending   int             // recorded and not yet written or given up; guarded by mu
	drained   []chan struct{} // closed when pending drops to 0; guarded by mu
	stopping  chan struct{}   // closed by Flush: no more retries
	flushOnce sync.Once
}

// New starts a Writer whose events name component as their source. ctx carries the
// logger; the Writer outlives it, until Flush.
func New(ctx context.Context, kube kubernetes.Interface, clk clock.Clock, component string) *Writer {
	w := &Writer{
		kube: kube, clock: clk,
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{}),
		stopping:   make(chan struct{}),
	}
	// The broadcaster outlives ctx: it is shut down by Flush, after the last decision.
	w.broadcaster = record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	w.broadcaster.StartEventWatcher(func(e *corev1.Event) { w.write(klog.FromContext(ctx), e) })
	w.recorder = &countingRecorder{EventRecorder: w.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), w: w}
	return w
}

// Recorder records the events this Writer writes.
func (w *Writer) Recorder() record.EventRecorder { return w.recorder }

// Flush waits until every recorded event is written or given up, or until ctx is done,
// then shuts the broadcaster down; calls after the first do nothing.
func (w *Writer) Flush(ctx context.Context) {
	w.flushOnce.Do(func() {
		close(w.stopping)
		defer w.broadcaster.Shutdown()
		w.wait(ctx)
	})
}

// wait returns once every recorded event is written or given up, or ctx has ended.
func (w *Writer) wait(ctx context.Context) {
	w.mu.Lock()
	if w.pending == 0 {
		w.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	w.drained = append(w.drained, ch)
	left := w.pending
	w.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		klog.FromContext(ctx).Error(nil, "Stopping before every event was written", "unwritten", left)
	}
}

func (w *Writer) add() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending++
}

func (w *Writer) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending--; w.pending == 0 {
		for _, ch := range w.drained {
			close(ch)
		}
		w.drained = nil
	}
}

// write sends one event, retrying transport errors until it is written, refused, out of
// tries, or the writer is stopping.
func (w *Writer) write(logger klog.Logger, e *corev1.Event) {
	defer w.done()
	res, err := w.correlator.EventCorrelate(e)
	if err != nil {
		logger.Error(err, "Event correlation failed")
	}
	if res.Skip {
		return
	}
	for try := 1; ; try++ {
		err := w.send(res.Event, res.Patch)
		if err == nil {
			return
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			// The server refused the event itself; sending it again would not help.
			logger.V(2).Info("Server rejected event", "event", klog.KObj(res.Event), "reason", res.Event.Reason, "err", err)
			return
		}
		if try >= eventTries {
			logger.Error(err, "Unable to write event (retry limit exceeded)", "event", klog.KObj(res.Event), "reason", res.Event.Reason)
			return
		}
		wait := eventRetryWait
		if try == 1 {
			wait = time.Duration(rand.Int64N(int64(eventRetryWait)))
		}
		select {
		case <-w.stopping:
			logger.Error(err, "Unable to write event (stopping)", "event", klog.KObj(res.Event), "reason", res.Event.Reason)
			return
		case <-w.clock.After(wait):
		}
	}
}

// send patches an aggregated event's count, or creates the event (also when the one to
// patch is gone).
func (w *Writer) send(e *corev1.Event, patch []byte) error {
	client := w.kube.CoreV1().Events(e.Namespace)
	// A request in flight is not cut short by the stop: the stop's own deadline bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		written *corev1.Event
		err     error
	)
	if e.Count > 1 {
		written, err = client.Patch(ctx, e.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	if e.Count <= 1 || apierrors.IsNotFound(err) {
		fresh := e.DeepCopy()
		fresh.ResourceVersion = ""
		written, err = client.Create(ctx, fresh, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	w.correlator.UpdateState(written)
	return nil
}

// countingRecorder counts each event before the broadcaster queues it. Events the
// recorder would drop before queuing (an object without a reference, an unknown type) are
// not counted; one the broadcaster drops because its queue is full (1000 events) is, and
// makes the stop wait for its full grace.
type countingRecorder struct {
	record.EventRecorder
	w *Writer
}

func (r *countingRecorder) count(object runtime.Object, eventtype string) {
	if _, err := reference.GetReference(scheme.Scheme, object); err != nil {
		return
	}
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return
	}
	r.w.add()
}

func (r *countingRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.count(object, eventtype)
	r.EventRecorder.Event(object, eventtype, reason, message)
}

func (r *countingRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.count(object, eventtype)
	r.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r *countingRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.count(object, eventtype)
	r.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}
