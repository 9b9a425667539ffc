package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAwaitBinaryWaitsForTheBuildItLinksTo: the set's link to a component still building
// dangles; the wait ends when the binary appears, at once when the build left its .failed
// file, and at the deadline or the context's end otherwise.
func TestAwaitBinaryWaitsForTheBuildItLinksTo(t *testing.T) {
	tests := []struct {
		name    string
		built   bool          // the binary is there from the start
		buildIn time.Duration // the binary appears after this (0: never)
		failed  bool          // the build leaves its .failed file
		wait    time.Duration
		cancel  bool
		wantErr string
	}{
		{name: "built already: no wait", built: true, wait: time.Minute},
		{name: "appears while waiting", buildIn: 1500 * time.Millisecond, wait: time.Minute},
		{name: "build failed: error at once, quoting it", failed: true, wait: time.Minute, wantErr: "the build of"},
		{name: "not built in time", wait: 1500 * time.Millisecond, wantErr: "was not built within"},
		{name: "context ends", wait: time.Minute, cancel: true, wantErr: "context canceled"},
		{name: "no wait asked: returns for startProcess to report", wait: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			compDir := filepath.Join(dir, "components", "prometheus-abc")
			target := filepath.Join(compDir, "prometheus")
			link := filepath.Join(dir, "set", "prometheus")
			for _, d := range []string{compDir, filepath.Dir(link)} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			write := func() {
				if err := os.WriteFile(target, []byte("#!/bin/true\n"), 0o755); err != nil {
					t.Error(err)
				}
			}
			if tc.built {
				write()
			}
			if tc.buildIn > 0 {
				timer := time.AfterFunc(tc.buildIn, write)
				defer timer.Stop()
			}
			if tc.failed {
				if err := os.WriteFile(compDir+".failed", []byte("build-testbin: building it failed\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			t0 := time.Now()
			waited, err := awaitBinary(ctx, link, tc.wait)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("awaitBinary: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("awaitBinary: error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.buildIn > 0 && waited < tc.buildIn-100*time.Millisecond {
				t.Errorf("waited %s, but the binary appeared only after %s", waited, tc.buildIn)
			}
			if (tc.failed || tc.cancel) && time.Since(t0) >= tc.wait {
				t.Errorf("waited the whole %s instead of stopping at once", tc.wait)
			}
		})
	}
}
