package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kubectl runs the kubectl found on PATH, with PluginDir first on PATH so that kubectl's plugin
// discovery finds the kubectl-hpa built for the test.
type Kubectl struct {
	Kubeconfig string
	PluginDir  string
	// CacheDir keeps kubectl's discovery cache apart from the user's (clusters of earlier runs
	// answered on the same address).
	CacheDir string
}

// Kubectl returns a runner authenticated by kubeconfig (AdminKubeconfig or PluginKubeconfig).
func (c *Cluster) Kubectl(kubeconfig, pluginDir string) Kubectl {
	return Kubectl{Kubeconfig: kubeconfig, PluginDir: pluginDir, CacheDir: filepath.Join(c.dir, "kube-cache")}
}

// Command prepares kubectl with args; the caller may set its streams and start it.
func (k Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	env := os.Environ()
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") && k.PluginDir != "" {
			env[i] = "PATH=" + k.PluginDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	env = append(env, "KUBECONFIG="+k.Kubeconfig)
	if k.CacheDir != "" {
		env = append(env, "KUBECACHEDIR="+k.CacheDir)
	}
	cmd.Env = env
	return cmd
}

// Run runs kubectl with args and returns its stdout; a failure carries stderr.
func (k Kubectl) Run(ctx context.Context, args ...string) (string, error) {
	cmd := k.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
