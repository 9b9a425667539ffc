package run

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-hpa/kubectl-hpa/controller/lease"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
)

// TestRecordingHoldsEverySyncReportedBeforeItCloses: syncs reported from several workers at
// once, and the Term entry of each controller, are all in the file once it is closed (run
// closes it after its controller stopped), compressed or not.
func TestRecordingHoldsEverySyncReportedBeforeItCloses(t *testing.T) {
	for _, name := range []string{"run.jsonl", "run.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			rec, err := openRecording(path)
			if err != nil {
				t.Fatal(err)
			}
			o, _, _ := notesOptions("", "")
			if err := rec.start(o.recordingHeader("metrics.k8s.io/v1beta1", now), func(_ time.Time, msg string) { t.Errorf("note: %s", msg) }); err != nil {
				t.Fatal(err)
			}
			const workers, each = 5, 40
			reports := testReports(false)
			for term := range 2 {
				sink := rec.sink(now.Add(time.Duration(term) * time.Minute))
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for i := range each {
							sink(reports[i%len(reports)])
						}
					})
				}
				wg.Wait()
			}
			if err := rec.close(); err != nil {
				t.Fatal(err)
			}
			got, err := recording.Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Terms) != 2 || len(got.Syncs) != 2*workers*each {
				t.Fatalf("read %d terms and %d syncs, want 2 and %d", len(got.Terms), len(got.Syncs), 2*workers*each)
			}
			if h := got.Header; h.Controller.Namespace != "shop" || h.Controller.SyncPeriod.Std() != 15*time.Second || h.Controller.Workers != 5 || h.DryRun != "none" ||
				h.MetricsSource != "metrics.k8s.io/v1beta1" || !strings.HasPrefix(h.Recorder, "kubectl-hpa v") || h.Config() != o.Controller.Config {
				t.Errorf("header %+v does not say how run was configured", h)
			}
			byKey := map[string]int{}
			for _, s := range got.Syncs {
				byKey[s.Key]++
			}
			for _, r := range reports {
				if byKey[r.Key] == 0 {
					t.Errorf("no sync of %s recorded", r.Key)
				}
			}
			if s := got.Syncs[len(got.Syncs)-1]; s.Term != 2 {
				t.Errorf("last sync in term %d, want 2", s.Term)
			}
		})
	}
}

func TestRecordingFailuresAreSaidOnceAndEndRunNonZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	o, _, _ := notesOptions("", "")
	if err := rec.start(o.recordingHeader("metrics.k8s.io/v1beta1", now), func(_ time.Time, msg string) { notes = append(notes, msg) }); err != nil {
		t.Fatal(err)
	}
	// The file goes away under the writer, as on a failing disk.
	_ = rec.file.Close()
	sink := rec.sink(now)
	// Enough to overflow the buffer: the write fails on the way, not only at close.
	for range 200 {
		sink(testReports(false)[0])
	}
	err = rec.close()
	cause := fmt.Sprintf("writing the recording %s: write %s: file already closed", path, path)
	if want := fmt.Sprintf("--record %s is incomplete: %s", path, cause); err == nil || err.Error() != want {
		t.Errorf("close: %v\nwant %s", err, want)
	}
	if want := fmt.Sprintf("--record %s: %s; this sync and later ones are not recorded (run goes on)", path, cause); len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q, want the failure said once as it happened: %q", notes, want)
	}
}

func TestRecordingPathsThatCannotBeWrittenAreBadFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "run.jsonl")
	_, err := openRecording(missing)
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Fatalf("error %v (%T), want an cmdutil.ExitError with cmdutil.ExitUsage", err, err)
	}
	if want := fmt.Sprintf("--record: open %s: no such file or directory", missing); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestARunThatNeverStartedLeavesNoRecordingBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty recording was left behind: %v", err)
	}
}

// TestAStopClosesTheRecordingBeforeTheLeaseIsReleased: a stop that ends a Lease term leaves
// the recording complete as soon as the term's controller has returned, before run releases
// the Lease: a stop cut short by its deadline during the release loses no sync.
func TestAStopClosesTheRecordingBeforeTheLeaseIsReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl.gz")
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	o, _, _ := notesOptions("", "")
	r := newRenderer(o, "metrics.k8s.io/v1beta1", func() {})
	if err := rec.start(o.recordingHeader("metrics.k8s.io/v1beta1", now), r.note); err != nil {
		t.Fatal(err)
	}
	// No sync runs: the informers never sync, so no metrics are read.
	l := newLoop(o, unreadMetrics{}, r, rec)
	api := httptest.NewServer(http.NotFoundHandler())
	defer api.Close()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	// The Lease is still held: the term ends because run stops, not because it was lost.
	if err := l.runTerm(stopped, &rest.Config{Host: api.URL}, "ops-1_abc", lease.Term{Leading: context.Background()}); err != nil {
		t.Fatalf("runTerm: %v", err)
	}
	got, err := recording.Load(path, nil)
	if err != nil {
		t.Fatalf("the recording once the stopped term's controller returned: %v", err)
	}
	if len(got.Terms) != 1 {
		t.Errorf("%d terms recorded, want 1", len(got.Terms))
	}
	if err := rec.close(); err != nil {
		t.Errorf("closing the recording again at run's end: %v", err)
	}
}

// unreadMetrics is a metrics client no test calls.
type unreadMetrics struct{ metrics.Client }
