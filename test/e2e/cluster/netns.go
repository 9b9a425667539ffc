package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// hostNetnsEnv carries the parent's network namespace to the re-executed child, which checks
// that it really is somewhere else before it touches lo.
const hostNetnsEnv = "KUBECTL_HPA_E2E_HOST_NETNS"

// RunIsolated runs the calling program inside a private network and PID namespace.
//
// Called in the original process, it re-executes the program (same arguments and environment)
// in new namespaces, forwards SIGINT and SIGTERM to it, waits, and returns the child's exit
// code with isParent true: the caller should exit with that code. Called in the re-executed
// child, it brings lo up with ip as a second address and returns isParent false: the caller
// carries on. The child is PID 1 of its namespace, so when it exits the kernel kills every
// process it started, and it is killed itself if the parent dies: no component can outlive a
// run. Needs root (creating namespaces) and ip(8).
func RunIsolated(ip string) (exitCode int, isParent bool, err error) {
	if host, ok := os.LookupEnv(hostNetnsEnv); ok {
		return 0, false, setUpChild(host, ip)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, true, fmt.Errorf("isolation: locating own executable: %w", err)
	}
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return 0, true, fmt.Errorf("isolation: reading own network namespace: %w", err)
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), hostNetnsEnv+"="+host)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return 0, true, fmt.Errorf("isolation: creating network and PID namespaces needs root (CAP_SYS_ADMIN): %w", err)
		}
		return 0, true, fmt.Errorf("isolation: starting %s in new namespaces: %w", self, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			// Let the child tear its cluster down; it is PID 1 of its namespace, so it only
			// sees signals it handles (Go handles them all).
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if code := exit.ExitCode(); code >= 0 {
					return code, true, nil
				}
				return 1, true, nil // killed by a signal
			}
			if err != nil {
				return 1, true, fmt.Errorf("isolation: waiting for child: %w", err)
			}
			return 0, true, nil
		}
	}
}

func setUpChild(hostNetns, ip string) error {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("isolation: reading own network namespace: %w", err)
	}
	if own == hostNetns {
		return fmt.Errorf("isolation: still in the host network namespace %s; refusing to add %s to its lo", own, ip)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("isolation: ip(8) is needed to configure lo (install iproute2): %w", err)
	}
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", ip + "/32", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("isolation: ip %v: %w: %s", args, err, out)
		}
	}
	return nil
}

// Isolated reports whether this process is the re-executed child of RunIsolated.
func Isolated() bool {
	_, ok := os.LookupEnv(hostNetnsEnv)
	return ok
}

// HostPID is this process's id as the host sees it (inside the namespace it is 1), for
// entering the namespace from outside: nsenter --net=/proc/<HostPID>/ns/net. /proc is still the
// host's mount, so its "self" link names the host pid.
func HostPID() (int, error) {
	link, err := os.Readlink("/proc/self")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/self: %w", err)
	}
	pid, err := strconv.Atoi(link)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/self -> %q: %w", link, err)
	}
	return pid, nil
}
