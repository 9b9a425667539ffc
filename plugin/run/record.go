package run

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/version"
)

// recordFlushInterval is how often buffered syncs reach the file while run runs: a crash or
// a forced exit loses at most this much; a stop (Ctrl-C, SIGTERM) loses nothing.
const recordFlushInterval = time.Second

// recorder writes every sync run reports to --record FILE, beside run's own report: the
// inputs of each decision and its result, so that the file replays exactly.
type recorder struct {
	path string
	file *os.File
	// note says a failure once, as it happens (run's renderer).
	note func(time.Time, string)

	mu sync.Mutex
	w  *recording.Writer
	// term numbers the controllers run starts (one per Lease term).
	term int
	// err is the first failure, reported once and returned by close.
	err error

	stop, stopped chan struct{}
	// closeOnce closes the file once; closeErr is what that close returned.
	closeOnce sync.Once
	closeErr  error
}

// openRecording creates the --record file before run connects anywhere, so that a path that
// cannot be written fails at once, as the bad flag value it is.
func openRecording(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--record: %w", err)
	}
	return &recorder{path: path, file: f, stop: make(chan struct{}), stopped: make(chan struct{})}, nil
}

// start writes the header and flushes every recordFlushInterval until close.
func (r *recorder) start(h recording.Header, note func(time.Time, string)) error {
	r.note = note
	w, err := recording.NewWriter(r.path, r.file, strings.HasSuffix(r.path, ".gz"), h)
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	r.w = w
	go func() {
		defer close(r.stopped)
		t := time.NewTicker(recordFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.failed(r.w.Flush())
			}
		}
	}()
	return nil
}

// sink returns the controller sink of a new controller: a Term entry first, since a new
// controller starts from no history (or one it restores), then every sync it reports.
func (r *recorder) sink(start time.Time) func(controller.Report) {
	r.mu.Lock()
	r.term++
	term := r.term
	r.mu.Unlock()
	r.failed(r.w.Term(recording.Term{Term: term, Start: start}))
	return func(rep controller.Report) {
		r.failed(r.w.Sync(recording.SyncOf(recordedReconcile(term, rep))))
	}
}

// recordedReconcile is one report as the recording keeps it.
func recordedReconcile(term int, rep controller.Report) recording.Reconcile {
	return recording.Reconcile{Term: term, Key: rep.Key, Input: rep.Input, PodsErr: rep.PodsErr, Decision: rep.Decision,
		ScaleWriteErr: rep.ScaleWriteErr, StatusWriteErr: rep.StatusWriteErr, Outcome: rep.Outcome, Kept: rep.Kept, DryRunReason: rep.DryRunReason}
}

// failed notes the first failure; later syncs fail fast on the writer's kept error, and run
// carries on controlling: the recording, not the HPAs, is what failed.
func (r *recorder) failed(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	first := r.err == nil
	if first {
		r.err = err
	}
	r.mu.Unlock()
	if first && r.note != nil {
		r.note(time.Now(), fmt.Sprintf("--record %s: %v; this sync and later ones are not recorded (run goes on)", r.path, err))
	}
}

// close flushes what is buffered and closes the file; it returns the first failure, if any,
// so that run exits non-zero with an incomplete recording. Without a header (run failed
// before it started) the empty file is removed. Calls after the first return its result. A
// stop closes it as soon as the last controller has returned (loop.stopped), before the Lease
// is released: should the stop then outlast its deadline, the forced exit cuts the release
// short, not the recording.
func (r *recorder) close() error {
	r.closeOnce.Do(func() { r.closeErr = r.closeFile() })
	return r.closeErr
}

func (r *recorder) closeFile() error {
	if r.w == nil {
		_ = r.file.Close()
		_ = os.Remove(r.path)
		return nil
	}
	close(r.stop)
	<-r.stopped
	err := r.w.Close()
	if cerr := r.file.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("closing the recording %s: %w", r.path, cerr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return fmt.Errorf("--record %s is incomplete: %w", r.path, r.err)
	}
	if err != nil {
		return fmt.Errorf("--record %s: %w", r.path, err)
	}
	return nil
}

// recordingHeader is the header of run's recording: its flags and the metrics source.
func (o *Options) recordingHeader(metricsSource string, now time.Time) recording.Header {
	c := o.Controller
	ctl, gates := recording.ControllerOf(recording.Controller{
		Namespace: c.Namespace, Selector: c.HPASelector, SyncPeriod: recording.Duration(c.SyncPeriod), Workers: o.Workers,
		ForceOwnership: c.ForceOwnership, OwnershipWindow: recording.Duration(c.OwnershipWindow), ScaleFromCache: c.ScaleFromCache,
		PersistHistory: c.PersistHistory,
	}, c.Config)
	return recording.Header{Recorder: "kubectl-hpa " + version.Get().Version, Started: now, Controller: ctl, FeatureGates: gates,
		MetricsSource: metricsSource, DryRun: string(c.DryRun)}
}
