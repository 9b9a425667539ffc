package main

import (
	"strings"
	"testing"
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
