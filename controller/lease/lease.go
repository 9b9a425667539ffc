// Package lease is the leader election of "kubectl hpa run": it runs the control loop only
// while this process holds a coordination.k8s.io Lease, ends the loop's writes the moment
// leadership ends (FenceConfig), and releases the Lease on stop, so that two runs on one
// namespace never write at the same time.
package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config names the Lease that keeps two writers apart.
type Config struct {
	Namespace, Name string
	// Identity of this process in the Lease (host name plus a random suffix is usual).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to kube-controller-manager's
	// 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseTimeout bounds the wait for releasing the Lease on stop (default 500ms); an
	// unreleased Lease simply expires after LeaseDuration.
	ReleaseTimeout time.Duration
	// OnWaiting, when set, is told who holds the Lease (and since when, as the Lease
	// records it) each time another holder is seen while this process waits for it.
	OnWaiting func(holder string, since time.Time)
	// OnAcquired, when set, is told each time this process acquires the Lease.
	OnAcquired func()
	// OnLost, when set, is told why each time leadership ends while the process runs (it
	// then stops writing and campaigns again).
	OnLost func(reason string)
}

func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.ReleaseTimeout == 0 {
		c.ReleaseTimeout = 500 * time.Millisecond
	}
	return c
}

// Validate checks the timing (zero values take the defaults) as the leader elector would,
// so that a bad value is reported before anything starts.
func (c Config) Validate() error {
	c = c.withDefaults()
	retryJittered := time.Duration(leaderelection.JitterFactor * float64(c.RetryPeriod))
	switch {
	case c.RetryPeriod < 0:
		return fmt.Errorf("the lease retry period must be positive, got %v", c.RetryPeriod)
	case c.LeaseDuration < time.Second:
		// The Lease stores its duration in whole seconds.
		return fmt.Errorf("the lease duration must be at least 1s, got %v", c.LeaseDuration)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("the lease duration (%v) must be greater than the renew deadline (%v)", c.LeaseDuration, c.RenewDeadline)
	case c.RenewDeadline+c.RetryPeriod+time.Second >= c.LeaseDuration.Truncate(time.Second):
		// The holder gives up writing only a retry period plus the renew deadline after its
		// last renewal. A standby counts the lease duration, stored in whole seconds, from
		// when it saw the record change, and the record holds renewTime to the second:
		// renewals within one second look alike to it, so it may count from up to a second
		// before the holder's last renewal. The holder must stop first, or both could write.
		return fmt.Errorf("the lease duration (%v, %v in whole seconds as the Lease stores it) must be greater than the renew deadline (%v) plus the retry period (%v) plus 1s: "+
			"a standby sees renewals to the second, so it may take over up to 1s before the lease duration has passed since the holder's last renewal",
			c.LeaseDuration, c.LeaseDuration.Truncate(time.Second), c.RenewDeadline, c.RetryPeriod)
	case c.RenewDeadline <= retryJittered:
		return fmt.Errorf("the renew deadline (%v) must be greater than %v times the retry period (%v), %v", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod, retryJittered)
	}
	return nil
}

// Term is one tenure as the Lease holder.
type Term struct {
	// Leading is cancelled the moment leadership ends (the renewal failed for the renew
	// deadline), and not by a stop: the context run gets is cancelled by both, and writes
	// in flight at a stop may finish (their grace), while at the end of leadership none
	// may, since a successor can take over once the lease duration has passed.
	Leading context.Context
	// PreviousHolderSeen is when the Lease, as last read before this term, says its previous
	// holder last renewed it (or released it): until then that holder was deciding. Zero
	// when unknown (no Lease yet, or this process held it last).
	PreviousHolderSeen time.Time
}

// RunTerms runs run only while holding the Lease, until ctx is cancelled or run fails.
// When leadership ends (renewals failed for the renew deadline: the API server is away, or
// another holder took the Lease), run's context is cancelled before anything else, one
// line says why, and the Lease is campaigned for again; run is called anew, with a fresh
// Term, each time it is reacquired. On stop the Lease is released once run has returned,
// so no write of ours can follow a successor's. It returns nil when ctx is cancelled.
func RunTerms(ctx context.Context, kube kubernetes.Interface, cfg Config, run func(context.Context, Term) error) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	lock := &watchedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}}
	for {
		lost, err := runTerm(ctx, lock, cfg, run)
		if err != nil || !lost || ctx.Err() != nil {
			return err
		}
		reason := lock.lossReason(cfg.RenewDeadline)
		logger.V(1).Info("Lost the lease: stopped writing; campaigning for it again", "lease", klog.KRef(cfg.Namespace, cfg.Name),
			"identity", cfg.Identity, "reason", reason)
		if cfg.OnLost != nil {
			cfg.OnLost(reason)
		}
	}
}

// runTerm campaigns for the Lease and runs run while holding it. lost reports that
// leadership ended while ctx was live.
func runTerm(ctx context.Context, lock *watchedLock, cfg Config, run func(context.Context, Term) error) (lost bool, err error) {
	t := &term{ctx: ctx, lock: lock, cfg: cfg, run: run, logger: klog.FromContext(ctx), runDone: make(chan struct{})}
	// The elector runs on its own context: once leading, it keeps renewing until run has
	// returned, and only a stop while campaigning cancels it early.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	t.cancelElect = cancelElect
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		// The elector's own release would run between the failed renewal and the
		// cancellation of leadCtx, for up to the renew deadline, while run still writes;
		// releasing is done here instead, after run has returned.
		ReleaseOnCancel: false,
		Name:            cfg.Namespace + "/" + cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: t.lead,
			OnStoppedLeading: func() {},
			OnNewLeader:      t.newLeader,
		},
	})
	if err != nil {
		return false, fmt.Errorf("configuring leader election on Lease %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	defer context.AfterFunc(ctx, t.stopCampaign)()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		// The elector's progress lines (attempting, acquired) are the callbacks' to tell;
		// its errors still show at every verbosity.
		le.Run(klog.NewContext(electCtx, t.logger.V(1)))
	}()
	return t.end(electorDone)
}

// termState is where a term is: it campaigns, then either runs (it won the Lease and called
// run) or is over without having run (the elector stopped first). It never goes back.
type termState int

const (
	campaigning termState = iota
	running
	overUnrun
)

// term is one campaign for the Lease and, once won, one tenure.
type term struct {
	ctx         context.Context // the caller's: cancelled by a stop
	lock        *watchedLock
	cfg         Config
	run         func(context.Context, Term) error
	logger      klog.Logger
	cancelElect context.CancelFunc

	mu    sync.Mutex
	state termState // guarded by mu

	// Written by lead before runDone is closed.
	leading context.Context
	runErr  error
	runDone chan struct{}
}

// move changes the state from one to another, and says whether it was in from.
func (t *term) move(from, to termState) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != from {
		return false
	}
	t.state = to
	return true
}

// lead is the elector's OnStartedLeading: run, for as long as leadCtx lasts or until a stop.
func (t *term) lead(leadCtx context.Context) {
	if !t.move(campaigning, running) {
		return
	}
	defer close(t.runDone)
	runCtx, cancel := context.WithCancel(leadCtx)
	defer cancel()
	defer context.AfterFunc(t.ctx, cancel)()
	t.leading = leadCtx
	t.logger.V(1).Info("Acquired the lease", "lease", klog.KRef(t.cfg.Namespace, t.cfg.Name), "identity", t.cfg.Identity)
	if t.cfg.OnAcquired != nil {
		t.cfg.OnAcquired()
	}
	t.runErr = t.run(runCtx, Term{Leading: leadCtx, PreviousHolderSeen: t.lock.previousSeen()})
}

// newLeader is the elector's OnNewLeader: another instance holds the Lease.
func (t *term) newLeader(id string) {
	if id == t.cfg.Identity || id == "" {
		return
	}
	t.logger.V(1).Info("Another instance holds the lease; waiting", "lease", klog.KRef(t.cfg.Namespace, t.cfg.Name), "holder", id)
	if t.cfg.OnWaiting != nil {
		t.cfg.OnWaiting(id, t.lock.acquiredBy(id))
	}
}

// stopCampaign ends the campaign on a stop, unless run was called: then the elector renews
// until run has returned.
func (t *term) stopCampaign() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != running {
		t.cancelElect()
	}
}

// end waits for the term to end, and releases the Lease unless leadership was lost.
func (t *term) end(electorDone <-chan struct{}) (lost bool, err error) {
	select {
	case <-electorDone:
		if t.move(campaigning, overUnrun) {
			if t.ctx.Err() == nil {
				// Won and lost again before run was even called.
				return true, nil
			}
			// Stopped while campaigning; the Lease may have been won meanwhile.
			release(t.ctx, t.lock, t.cfg)
			return false, nil
		}
		// Leadership ended: the elector has cancelled run's context; wait for run.
		<-t.runDone
		if t.ctx.Err() != nil {
			release(t.ctx, t.lock, t.cfg)
			return false, t.runErr
		}
		return t.runErr == nil, t.runErr
	case <-t.runDone:
		// The elector cancels the term's context before it returns, so run may return
		// first when leadership ends: that is a loss too, and the elector is already
		// finishing on its own.
		if t.leading.Err() != nil && t.ctx.Err() == nil && t.runErr == nil {
			<-electorDone
			return true, nil
		}
		// run returned while leading (a stop, or its own failure): stop renewing, then
		// release.
		t.cancelElect()
		<-electorDone
		release(t.ctx, t.lock, t.cfg)
		return false, t.runErr
	}
}

// release gives the Lease up if it still names us, as the elector would, within
// cfg.ReleaseTimeout; an unreleased Lease expires after the lease duration.
func release(ctx context.Context, lock *watchedLock, cfg Config) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ReleaseTimeout)
	defer cancel()
	err := func() error {
		rec, _, err := lock.Get(rctx)
		if err != nil {
			return err
		}
		if rec.HolderIdentity != cfg.Identity {
			return nil
		}
		now := metav1.Now()
		return lock.Update(rctx, resourcelock.LeaderElectionRecord{
			LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now})
	}()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not release the lease; it expires on its own", "lease", klog.KRef(cfg.Namespace, cfg.Name), "after", cfg.LeaseDuration)
	}
}

// watchedLock remembers what the last Lease requests saw, to say why leadership ended.
type watchedLock struct {
	resourcelock.Interface
	mu      sync.Mutex
	lastErr error  // of the last request, nil after a success
	holder  string // the holder last read or written
	// acquired is when holder acquired the Lease, as the Lease last read says.
	acquired time.Time
	// otherRenewed is the renew time of the last Lease read that another holder (or
	// nobody, after a release) held.
	otherRenewed time.Time
}

// previousSeen is when another holder last renewed (or released) the Lease, as last read.
func (l *watchedLock) previousSeen() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.otherRenewed
}

// acquiredBy is when holder acquired the Lease, as last read; zero if unknown.
func (l *watchedLock) acquiredBy(holder string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != holder {
		return time.Time{}
	}
	return l.acquired
}

func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr = err
	if err == nil {
		l.holder = rec.HolderIdentity
		l.acquired = rec.AcquireTime.Time
		if rec.HolderIdentity != l.Identity() {
			l.otherRenewed = rec.RenewTime.Time
		}
	}
	return rec, raw, err
}

func (l *watchedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.note(rec, l.Interface.Create(ctx, rec))
}

func (l *watchedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.note(rec, l.Interface.Update(ctx, rec))
}

func (l *watchedLock) note(rec resourcelock.LeaderElectionRecord, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr = err
	if err == nil {
		l.holder = rec.HolderIdentity
	}
	return err
}

// lossReason says why renewals stopped: another holder in the Lease, or the last error.
func (l *watchedLock) lossReason(renewDeadline time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != "" && l.holder != l.Identity() {
		return fmt.Sprintf("another instance, %s, now holds it", l.holder)
	}
	if l.lastErr != nil {
		return fmt.Sprintf("renewing it failed for the renew deadline (%v), the API server may be unreachable: %v", renewDeadline, l.lastErr)
	}
	return fmt.Sprintf("renewing it did not succeed within the renew deadline (%v)", renewDeadline)
}

// errNotLeading fails the requests of a term that has ended.
var errNotLeading = errors.New("not sent: this process no longer holds the lease")

// FenceConfig returns a copy of cfg whose requests end with leading: once it is done, a
// request fails before it is sent and one in flight is cancelled. Clients built from it
// for one Term cannot write after the Term, whatever grace their callers give writes.
func FenceConfig(leading context.Context, cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return &fencedTransport{next: next, leading: leading} })
	return cfg
}

type fencedTransport struct {
	next    http.RoundTripper
	leading context.Context
}

func (f *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.leading.Err() != nil {
		return nil, errNotLeading
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(f.leading, func() { cancel(errNotLeading) })
	done := func() {
		stop()
		cancel(nil)
	}
	resp, err := f.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		done()
		if errors.Is(context.Cause(ctx), errNotLeading) {
			return nil, fmt.Errorf("%w: %w", errNotLeading, err)
		}
		return nil, err
	}
	// The body (a watch's stream included) belongs to the request: the fence holds
	// until it is closed.
	resp.Body = &fencedBody{ReadCloser: resp.Body, done: done}
	return resp, nil
}

type fencedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *fencedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
