// Package eventsink records the controller's events and writes them to the API server, and
// lets a stop wait until the events already queued are written.
package eventsink

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// eventTries and eventRetryWait are upstream's: 12 tries, 10s apart (the first wait jittered).
const (
	eventTries     = 12
	eventRetryWait = 10 * time.Second
)

// queueLength is how many recorded events wait to be written, as in client-go's broadcaster;
// an event recorded while the queue is full is dropped and counted.
const queueLength = 1000

// Writer records the controller's events and writes them to the API server as client-go's
// broadcaster and sink do (a bounded queue, correlation, aggregation, the spam filter,
// retries while the server is away), but it knows which recorded events are not written
// yet, so a stop can wait for them: the events of a decision whose writes finish during the
// stop's grace are written too. An event the full queue drops is counted as dropped, not
// waited for.
type Writer struct {
	kube  kubernetes.Interface
	clock clock.Clock // times the retries
	// stamps times the events: the real clock, as client-go's recorder and the correlator,
	// whose windows it must agree with, use; an event's name is its object's and this time.
	stamps     clock.PassiveClock
	correlator *record.EventCorrelator
	source     corev1.EventSource
	logger     klog.Logger
	queue      chan *corev1.Event

	mu           sync.Mutex
	pending      int             // queued and not yet written or given up; guarded by mu
	dropped      int             // recorded while the queue was full; guarded by mu
	lastDropSaid time.Time       // when a drop was last logged; guarded by mu
	flushed      bool            // Flush has returned: nothing more is queued; guarded by mu
	drained      []chan struct{} // closed when pending drops to 0; guarded by mu
	stopping     chan struct{}   // closed by Flush: no more retries
	quit         chan struct{}   // closed when Flush returns: the writing goroutine ends
	flushOnce    sync.Once
}

// New starts a Writer whose events name component as their source. ctx carries the
// logger; the Writer outlives it, until Flush.
func New(ctx context.Context, kube kubernetes.Interface, clk clock.Clock, component string) *Writer {
	return newWriter(ctx, kube, clk, component, queueLength)
}

// newWriter is New with a queue of the given length.
func newWriter(ctx context.Context, kube kubernetes.Interface, clk clock.Clock, component string, queue int) *Writer {
	w := &Writer{
		kube: kube, clock: clk, stamps: clock.RealClock{},
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{}),
		source:     corev1.EventSource{Component: component},
		logger:     klog.FromContext(ctx),
		queue:      make(chan *corev1.Event, queue),
		stopping:   make(chan struct{}),
		quit:       make(chan struct{}),
	}
	go w.run()
	return w
}

// Recorder records the events this Writer writes.
func (w *Writer) Recorder() record.EventRecorder { return recorder{w} }

// Dropped is how many recorded events were dropped because the queue was full.
func (w *Writer) Dropped() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Flush waits until every queued event is written or given up, or until ctx is done, then
// stops the Writer: events recorded after it are not written. Calls after the first do
// nothing.
func (w *Writer) Flush(ctx context.Context) {
	w.flushOnce.Do(func() {
		close(w.stopping)
		w.wait(ctx)
		w.mu.Lock()
		w.flushed = true
		dropped := w.dropped
		w.mu.Unlock()
		close(w.quit)
		if dropped > 0 {
			w.logger.Info("Events were dropped while the queue of events to write was full", "dropped", dropped, "queue", cap(w.queue))
		}
	})
}

// run writes the queued events one after the other until Flush returns.
func (w *Writer) run() {
	for {
		select {
		case e := <-w.queue:
			w.write(e)
		case <-w.quit:
			return
		}
	}
}

// wait returns once every queued event is written or given up, or ctx has ended.
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
		w.logger.Error(nil, "Stopping before every event was written", "unwritten", left)
	}
}

// dropLogEvery spaces the lines saying events are dropped: a burst drops thousands, and a
// line each would flood the output the person watching reads.
const dropLogEvery = 10 * time.Second

// enqueue queues e, or drops it when the queue is full, saying so at most every dropLogEvery.
func (w *Writer) enqueue(e *corev1.Event) {
	w.mu.Lock()
	if w.flushed {
		w.mu.Unlock()
		return
	}
	select {
	case w.queue <- e:
		w.pending++
		w.mu.Unlock()
		return
	default:
	}
	w.dropped++
	dropped, now := w.dropped, w.clock.Now()
	say := w.lastDropSaid.IsZero() || now.Sub(w.lastDropSaid) >= dropLogEvery
	if say {
		w.lastDropSaid = now
	}
	w.mu.Unlock()
	if say {
		w.logger.Error(nil, "Dropping events: the queue of events to write is full", "queue", cap(w.queue), "droppedSoFar", dropped, "event", klog.KObj(e), "reason", e.Reason)
	}
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

// write sends one queued event, retrying transport errors until it is written, refused,
// out of tries, or the writer is stopping.
func (w *Writer) write(e *corev1.Event) {
	logger := w.logger
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

// recorder builds the events of the objects it is given, as client-go's recorder does,
// and queues them on its Writer. An object without a reference or an event of an unknown
// type is logged and not queued.
type recorder struct{ w *Writer }

func (r recorder) record(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ref, err := reference.GetReference(scheme.Scheme, object)
	if err != nil {
		r.w.logger.Error(err, "Could not construct reference, will not report event", "object", object, "eventType", eventtype, "reason", reason)
		return
	}
	if !util.ValidateEventType(eventtype) {
		r.w.logger.Error(nil, "Unsupported event type", "eventType", eventtype, "reason", reason)
		return
	}
	now := metav1.Time{Time: r.w.stamps.Now()}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	r.w.enqueue(&corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: namespace, Annotations: annotations},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventtype,
		Source:              r.w.source,
		ReportingController: r.w.source.Component,
		ReportingInstance:   r.w.source.Host,
	})
}

func (r recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, nil, eventtype, reason, message)
}

func (r recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}
