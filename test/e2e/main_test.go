//go:build e2e

// Package e2e runs kubectl hpa against a real control plane (see package cluster). The tests
// need root (network and PID namespaces), the binaries of hack/build-testbin.sh and kubectl on
// PATH; `make test-e2e` provides everything. They are behind the e2e build tag so that
// `go test ./...` stays a unit-test run.
package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Environment variables that hand prepared inputs to the test binary (the Makefile sets them;
// when unset the test binary prepares them itself before entering the namespace).
const (
	testbinEnv = "KUBECTL_HPA_TESTBIN" // directory printed by hack/build-testbin.sh
	// How long Prometheus waits for its binary when the directory links a build still
	// running (make test starts the tests before Prometheus is built); a Go duration.
	testbinWaitEnv = "KUBECTL_HPA_TESTBIN_WAIT"
	pluginDirEnv   = "KUBECTL_HPA_PLUGIN_DIR" // directory holding the built kubectl-hpa
)

// shared is the one cluster every test uses, each in its own namespace; starting a control
// plane costs seconds, so tests share it and stay independent through namespaces.
var shared *cluster.Cluster

// withHeapster starts the real Heapster and its stand-in with the cluster; make soak turns
// them off (cluster.Config.WithoutHeapster), which the tests that read Heapster then fail.
var withHeapster = flag.Bool("e2e.heapster", true, "start the real Heapster and the Heapster stand-in with the cluster")

// nodes is how many nodes the node stand-in plays. make soak gives 100 pods each, as kubelets
// hold them (110 at most by default): one node of 50,000 pods answers metrics-server's scrape
// in one response too large to be a kubelet's, which timed out under load.
var nodes = flag.Int("e2e.nodes", 1, "how many nodes the node stand-in plays (more than 1 needs -e2e.heapster=false)")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if !cluster.Isolated() {
		// Still in the host namespaces, where the module proxy is reachable: build what is
		// missing, then re-execute inside a private network namespace.
		cleanup, err := prepare()
		defer cleanup()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			return 1
		}
	}
	code, isParent, err := cluster.RunIsolated(cluster.DefaultIP)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	if isParent {
		return code
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var binWait time.Duration
	if v := os.Getenv(testbinWaitEnv); v != "" {
		if binWait, err = time.ParseDuration(v); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s: %v\n", testbinWaitEnv, err)
			return 1
		}
	}
	t0 := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{
		BinDir:          os.Getenv(testbinEnv),
		BinWait:         binWait,
		WithoutHeapster: !*withHeapster,
		Nodes:           *nodes,
		Progress:        func(f string, a ...any) { fmt.Fprintf(os.Stderr, "e2e: start "+f+"\n", a...) },
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster ready in %.1fs (run dir %s)\n", time.Since(t0).Seconds(), c.Dir())
	shared = c
	code = m.Run()
	pids := c.Pids()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping cluster: %v\n", err)
		code = 1
	}
	if alive := alivePids(pids); len(alive) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: processes left behind after Stop: %v\n", alive)
		code = 1
	}
	return code
}

// prepare finds or builds the control-plane binaries and the plugin and records them in the
// environment the isolated child inherits. The returned cleanup removes what it built.
func prepare() (func(), error) {
	cleanup := func() {}
	root, err := filepath.Abs("../..")
	if err != nil {
		return cleanup, err
	}
	if os.Getenv(testbinEnv) == "" {
		out, err := exec.Command(filepath.Join(root, "hack", "build-testbin.sh")).Output()
		if err != nil {
			return cleanup, fmt.Errorf("hack/build-testbin.sh: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		os.Setenv(testbinEnv, lines[len(lines)-1])
	}
	if os.Getenv(pluginDirEnv) == "" {
		dir, err := os.MkdirTemp("", "kubectl-hpa-plugin-")
		if err != nil {
			return cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-hpa"), "./cmd/kubectl-hpa")
		build.Dir, build.Stderr = root, os.Stderr
		if err := build.Run(); err != nil {
			return cleanup, fmt.Errorf("building kubectl-hpa: %w", err)
		}
		os.Setenv(pluginDirEnv, dir)
	}
	if os.Getenv(demoEnv) == "" {
		dir, err := os.MkdirTemp("", "kubectl-hpa-demo-bin-")
		if err != nil {
			return cleanup, err
		}
		prev := cleanup
		cleanup = func() { prev(); os.RemoveAll(dir) }
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "e2e-demo"), "./test/e2e/demo")
		build.Dir, build.Stderr = root, os.Stderr
		if err := build.Run(); err != nil {
			return cleanup, fmt.Errorf("building the demo: %w", err)
		}
		os.Setenv(demoEnv, filepath.Join(dir, "e2e-demo"))
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		return cleanup, errors.New("kubectl is not on PATH; the tests drive the plugin through kubectl's plugin discovery")
	}
	return cleanup, nil
}

func alivePids(pids []int) []int {
	var alive []int
	for _, p := range pids {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			alive = append(alive, p)
		}
	}
	return alive
}
