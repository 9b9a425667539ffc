package simulate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
)

// fleetRecording writes run.jsonl's 17 syncs for each of n HPAs (shop/web-0 ...), interleaved
// as run records a fleet, gzipped as the soak records it, and returns its path.
func fleetRecording(b testing.TB, n int) string {
	b.Helper()
	rec, err := recording.Read(recordedRun, mustOpen(b, recordedRun))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "fleet.jsonl.gz")
	w, err := recording.Create(path, rec.Header)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range rec.Terms {
		if err := w.Term(t); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range rec.Syncs {
		for i := range n {
			c := s
			c.HPA = s.HPA.DeepCopy()
			c.HPA.Name = fmt.Sprintf("%s-%d", s.HPA.Name, i)
			c.Key = c.HPA.Namespace + "/" + c.HPA.Name
			if err := w.Sync(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func mustOpen(b testing.TB, path string) io.Reader {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// peakHeap samples the heap's live objects every millisecond until stop, and returns the most.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// BenchmarkReplayAFleetRecording replays a recording of 300 HPAs (5,100 syncs, 32 MB of JSON)
// as simulate --from-recording -o json does, and reports the peak heap beside the time: a
// replay that holds the file grows with it, one that reads it as it goes does not.
func BenchmarkReplayAFleetRecording(b *testing.B) {
	path := fleetRecording(b, 300)
	var peak uint64
	for b.Loop() {
		runtime.GC()
		stop := peakHeap()
		var errOut strings.Builder
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut}
		root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
		configFlags := genericclioptions.NewConfigFlags(true)
		configFlags.AddFlags(root.PersistentFlags())
		root.AddCommand(newCmd(NewOptions(configFlags, streams)))
		root.SetArgs([]string{"simulate", "--from-recording", path, "-o", "json"})
		if code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background())); code != 0 || !strings.Contains(errOut.String(), "every decision, outcome and history kept is run's") {
			b.Fatalf("exit %d: %.500s", code, errOut.String())
		}
		peak = max(peak, stop())
	}
	b.ReportMetric(float64(peak), "peak-heap-B")
}
