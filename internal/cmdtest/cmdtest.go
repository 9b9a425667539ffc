package cmdtest

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
)

// CheckGolden compares got with testdata/NAME.golden (or rewrites it with -update).
func CheckGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(got))
}

// Kubeconfig writes a kubeconfig whose context namespace is "default" (so -n matters).
func Kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SyncBuffer is a bytes.Buffer safe for a command's goroutines and the test.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// written, when set, sees each write once it is in the buffer.
	written func(p []byte)
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	written := s.written
	s.mu.Unlock()
	if written != nil {
		written(p)
	}
	return n, err
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// OnWrite has written see each write once it is in the buffer.
func (s *SyncBuffer) OnWrite(written func(p []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = written
}
