package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// writeRecorder keeps each Write it is given apart.
type writeRecorder struct{ writes []string }

func (r *writeRecorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

// The load driver announces its phases on the same stream from another goroutine; a line of it
// between the heading and the commands would split the block a user copies (and the e2e test
// reads). One write of a few hundred bytes to a pipe is atomic, so nothing can land inside it.
func TestPrintCommandsWritesTheHeadingAndItsCommandsInOneWrite(t *testing.T) {
	var r writeRecorder
	printCommands(&r, "/tmp/kubectl")
	if len(r.writes) != 1 {
		t.Fatalf("printCommands made %d writes, want 1: %q", len(r.writes), r.writes)
	}
	lines := strings.Split(strings.TrimSuffix(r.writes[0], "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "poke at the cluster from another terminal") {
		t.Fatalf("printed %q, want the heading and three commands", lines)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, commandIndent+"/tmp/kubectl ") {
			t.Errorf("command line %q does not start with the indent and the wrapper", l)
		}
	}
}

// deadConsole is a console whose reader is gone: every write fails, as on a closed pipe.
type deadConsole struct{ writes int }

func (d *deadConsole) Write([]byte) (int, error) {
	d.writes++
	return 0, syscall.EPIPE
}

// `make demo | tee log`: the Ctrl-C that stops the demo also ends tee, and the teardown the
// demo says next reaches no console. The log must still get every line, each write whole.
func TestStreamsWriteEveryLineToTheLogAfterTheConsoleIsGone(t *testing.T) {
	var out, errOut deadConsole
	var log writeRecorder
	s := newStreams(&out, &errOut, &log)
	s.say("tearing down")
	printCommands(s.err, "/tmp/kubectl")
	if n, err := s.out.Write([]byte("2026-11-30T15:39:03Z demo/web 6->6 cpu=191%/50% hold: ScaleUpLimit\n")); err != nil || n == 0 {
		t.Errorf("a write to stdout returned %d, %v; want it whole and no error (the demo must go on to its teardown)", n, err)
	}
	s.say("stopped; removed /tmp/kubectl-hpa-demo-1")
	if out.writes != 1 || errOut.writes != 3 {
		t.Errorf("console writes: stdout %d, stderr %d; want 1 and 3 (each tried although the console is gone)", out.writes, errOut.writes)
	}
	if len(log.writes) != 4 {
		t.Fatalf("the log got %d writes, want 4 (one per write to the streams): %q", len(log.writes), log.writes)
	}
	if log.writes[0] != "demo: tearing down\n" || log.writes[3] != "demo: stopped; removed /tmp/kubectl-hpa-demo-1\n" {
		t.Errorf("the log starts with %q and ends with %q, want the teardown lines", log.writes[0], log.writes[3])
	}
	if !strings.HasPrefix(log.writes[1], "demo: poke at the cluster") || strings.Count(log.writes[1], "\n") != 4 {
		t.Errorf("the commands reached the log as %q, want the heading and its three commands in one write", log.writes[1])
	}
}

func TestStreamsWithoutALogWriteTheConsoleOnly(t *testing.T) {
	var out, errOut bytes.Buffer
	s := newStreams(&out, &errOut, nil)
	s.say("cluster ready in %.1fs", 1.5)
	fmt.Fprint(s.out, "Name: web\n")
	if errOut.String() != "demo: cluster ready in 1.5s\n" || out.String() != "Name: web\n" {
		t.Errorf("stderr %q, stdout %q", errOut.String(), out.String())
	}
}

// The parent creates the log afresh, the isolated child appends to what the parent wrote, and
// neither follows a symbolic link planted at the path (the default one is in a shared /tmp).
func TestOpenLogTruncatesInTheParentAppendsInTheChildAndRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.log")
	if err := os.WriteFile(path, []byte("the previous demo's output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		fresh bool
		line  string
	}{{true, "demo: this output is also written to the log\n"}, {false, "demo: tearing down\n"}} {
		f, err := openLog(path, step.fresh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(step.line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "demo: this output is also written to the log\ndemo: tearing down\n"; string(got) != want {
		t.Errorf("the log holds %q, want %q", got, want)
	}

	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("not the demo's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := openLog(link, true); err == nil {
		f.Close()
		t.Errorf("openLog followed the symbolic link %s", link)
	}
	if b, _ := os.ReadFile(target); string(b) != "not the demo's\n" {
		t.Errorf("the link's target was changed: %q", b)
	}
}

// lockedLog keeps each write, for a writer on another goroutine.
type lockedLog struct {
	mu     sync.Mutex
	writes []string
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, string(p))
	return len(p), nil
}

func (l *lockedLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

// A wait says that it goes on at every tick, and nothing once it ended.
func TestHeartbeatSaysTheWaitGoesOnUntilStopped(t *testing.T) {
	var log lockedLog
	s := newStreams(&deadConsole{}, &deadConsole{}, &log)
	const every = 20 * time.Millisecond
	stop := heartbeat(context.Background(), s, every, "for pod metrics", "")
	for deadline := time.Now().Add(time.Minute); len(log.snapshot()) < 2; time.Sleep(every) {
		if time.Now().After(deadline) {
			t.Fatal("no two heartbeats in a minute")
		}
	}
	stop()
	n := len(log.snapshot())
	time.Sleep(5 * every)
	if got := log.snapshot(); len(got) != n || !strings.HasPrefix(got[0], "demo:   still waiting for pod metrics (0s)") {
		t.Errorf("heartbeat wrote %q, want a line a tick and none after stop", got)
	}
}
