package run

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestClosedOutputCallsOnClosedOnceWhenTheReaderHasGone(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	calls := 0
	out := &closedOutput{w: wr, onClosed: func() { calls++ }}
	if _, err := out.Write([]byte("read\n")); err != nil {
		t.Fatalf("write with a reader: %v", err)
	}
	if calls != 0 {
		t.Fatalf("onClosed called %d times while the reader is there", calls)
	}
	rd.Close()
	for range 3 {
		if _, err := out.Write([]byte("lost\n")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write after the reader closed: %v, want EPIPE", err)
		}
	}
	if calls != 1 {
		t.Errorf("onClosed called %d times after three writes to a closed pipe, want 1", calls)
	}
}

func TestClosedOutputIgnoresOtherWriteErrors(t *testing.T) {
	calls := 0
	out := &closedOutput{w: failingWriter{errors.New("disk full")}, onClosed: func() { calls++ }}
	if _, err := out.Write([]byte("x")); err == nil {
		t.Fatal("the writer's error was swallowed")
	}
	if calls != 0 {
		t.Errorf("onClosed called for an error that is not a closed pipe")
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// The renderer stops run (as Ctrl-C does) and says why on stderr when its output's reader has
// gone, in every output mode.
func TestRendererStopsRunWhenItsOutputReaderHasGone(t *testing.T) {
	for _, output := range []string{"", "json"} {
		t.Run("-o "+output, func(t *testing.T) {
			rd, wr, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer wr.Close()
			rd.Close()
			var errOut bytes.Buffer
			o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{Out: wr, ErrOut: &errOut})
			o.Output = output
			o.isTerminal = func() bool { return false }
			stopped := make(chan struct{})
			r := newRenderer(o, "metrics.k8s.io/v1beta1", func() { close(stopped) })
			r.report(testReports(output != "json")[0])
			select {
			case <-stopped:
			case <-time.After(time.Second):
				t.Fatal("run was not stopped after its output's reader had gone")
			}
			if want := "kubectl hpa run: the reader of run's output has gone (broken pipe); stopping as on Ctrl-C"; !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr %q, want it to say %q", errOut.String(), want)
			}
		})
	}
}
