package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

func TestLeaseConfigValidateRefusesTimingsTheElectorCannotKeep(t *testing.T) {
	cases := []struct {
		name    string
		cfg     LeaseConfig
		wantErr string
	}{
		{"zero values take kube-controller-manager's defaults", LeaseConfig{}, ""},
		{"short timings for tests", LeaseConfig{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 250 * time.Millisecond}, ""},
		{"a lease shorter than a second cannot be stored", LeaseConfig{LeaseDuration: 900 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, "at least 1s"},
		{"the lease must outlast the renew deadline", LeaseConfig{LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second}, "greater than the renew deadline"},
		{"the renew deadline must allow a jittered retry", LeaseConfig{LeaseDuration: 5 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}, "times the retry period"},
		{"a negative retry period", LeaseConfig{RetryPeriod: -time.Second}, "must be positive"},
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

func TestRunWithLeaseRefusesAnInvalidTimingBeforeRunning(t *testing.T) {
	called := false
	err := RunWithLease(context.Background(), fake.NewClientset(), LeaseConfig{Namespace: ns, Name: "kubectl-hpa", Identity: "me", LeaseDuration: time.Second, RenewDeadline: time.Second},
		func(context.Context) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("RunWithLease with lease duration = renew deadline: err %v, run called %v; want an error and no run", err, called)
	}
}
