package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaseConfig names the Lease that keeps two writers apart.
type LeaseConfig struct {
	Namespace, Name string
	// Identity of this process in the Lease (host name plus a random suffix is usual).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to kube-controller-manager's
	// 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseTimeout bounds the wait for releasing the Lease on stop (default 500ms); an
	// unreleased Lease simply expires after LeaseDuration.
	ReleaseTimeout time.Duration
}

func (c LeaseConfig) withDefaults() LeaseConfig {
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
func (c LeaseConfig) Validate() error {
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
	case c.RenewDeadline <= retryJittered:
		return fmt.Errorf("the renew deadline (%v) must be greater than %v times the retry period (%v), %v", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod, retryJittered)
	}
	return nil
}

// ErrLostLease is returned by RunWithLease when the Lease was lost while running.
var ErrLostLease = errors.New("lost the leader election lease; another kubectl hpa run took over")

// RunWithLease runs run(ctx) only while holding the Lease. It returns when ctx is cancelled
// (after run has returned, and only then releasing the Lease, so no write of ours can follow
// a successor's) or with ErrLostLease when renewal failed.
func RunWithLease(ctx context.Context, kube kubernetes.Interface, cfg LeaseConfig, run func(context.Context) error) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	// The elector runs on its own context, cancelled only once run has returned: the Lease
	// is released after our last write.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	var (
		started atomic.Bool
		runErr  error
		runDone = make(chan struct{})
	)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.Namespace + "/" + cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				started.Store(true)
				defer close(runDone)
				defer cancelElect()
				runCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				logger.Info("Acquired the lease", "lease", klog.KRef(cfg.Namespace, cfg.Name), "identity", cfg.Identity)
				runErr = run(runCtx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					logger.Info("Another instance holds the lease; waiting", "lease", klog.KRef(cfg.Namespace, cfg.Name), "holder", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election on Lease %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	// Stop waiting for the Lease when asked to stop before acquiring it.
	stopWaiting := context.AfterFunc(ctx, func() {
		if !started.Load() {
			cancelElect()
		}
	})
	defer stopWaiting()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		le.Run(electCtx)
	}()
	select {
	case <-electorDone:
		// Stopped before acquiring, or the Lease was lost.
		if !started.Load() {
			return nil
		}
		<-runDone
	case <-runDone:
		// run returned and cancelled the elector, which now releases the Lease.
		t := time.NewTimer(cfg.ReleaseTimeout)
		defer t.Stop()
		select {
		case <-electorDone:
		case <-t.C:
			logger.Info("Releasing the lease is taking too long; it expires on its own", "lease", klog.KRef(cfg.Namespace, cfg.Name), "after", cfg.LeaseDuration)
		}
	}
	if runErr != nil {
		return runErr
	}
	if ctx.Err() == nil {
		return ErrLostLease
	}
	return nil
}
