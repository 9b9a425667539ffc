//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// What deploy/kubectl-hpa.yaml creates.
const (
	deployNamespace      = "kubectl-hpa"
	deployName           = "kubectl-hpa"
	deployServiceAccount = "kubectl-hpa"
)

var deployManifest = filepath.Join("..", "..", "deploy", "kubectl-hpa.yaml")

// deployVarRef is a $(VAR) reference in a container's command or args.
var deployVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// deployContainer is the container of the applied Deployment made runnable here: the command
// line with $(VAR) references expanded as the kubelet expands them, and the environment.
type deployContainer struct {
	argv []string
	env  []string
	// healthz is the liveness probe's URL for this process.
	healthz string
}

// deployContainerFor turns the Deployment's only container into a local process whose pod IP
// is podIP: env values and status.podIP field references are what the kubelet would give it.
func deployContainerFor(t *testing.T, dep *appsv1.Deployment, podIP string) deployContainer {
	t.Helper()
	if n := len(dep.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	vars := map[string]string{}
	var dc deployContainer
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			vars[e.Name] = podIP
		default:
			t.Fatalf("env %s: only values and status.podIP are emulated here", e.Name)
		}
		dc.env = append(dc.env, e.Name+"="+vars[e.Name])
	}
	expand := func(s string) string {
		return deployVarRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := vars[deployVarRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		dc.argv = append(dc.argv, expand(a))
	}
	if len(dc.argv) == 0 {
		t.Fatal("the container has no command")
	}
	probe := c.LivenessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatal("the container has no HTTP liveness probe")
	}
	port := probe.HTTPGet.Port.IntValue()
	for _, p := range c.Ports {
		if p.Name == probe.HTTPGet.Port.String() {
			port = int(p.ContainerPort)
		}
	}
	dc.healthz = "http://" + net.JoinHostPort(podIP, strconv.Itoa(port)) + probe.HTTPGet.Path
	return dc
}

// deployProcess is one replica of the Deployment run as a local process.
type deployProcess struct {
	c    deployContainer
	out  syncBuffer
	done chan error
}

// deployMountServiceAccount runs its arguments with the ServiceAccount files of $SA_DIR at
// the path the kubelet mounts them, in a mount namespace of their own (a tmpfs over /run,
// which /var/run points to), so the machine's /run is untouched.
const deployMountServiceAccount = `mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && cp "$SA_DIR"/token "$SA_DIR"/ca.crt "$SA_DIR"/namespace /run/secrets/kubernetes.io/serviceaccount/ && exec "$@"`

// deployStart runs one replica as the pod would: no kubeconfig, only the in-cluster
// environment and ServiceAccount files (saEnv, saDir), so client-go's in-cluster
// configuration is what connects it.
func deployStart(t *testing.T, c deployContainer, saDir string, saEnv []string) *deployProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The image has kubectl-hpa on PATH; here it is the binary built for the test. unshare
	// and sh exec it, so signals reach it directly.
	bin := filepath.Join(os.Getenv(pluginDirEnv), filepath.Base(c.argv[0]))
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", deployMountServiceAccount, "sh", bin}, c.argv[1:]...)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=")
	})
	cmd.Env = append(append(append(env, c.env...), saEnv...), "SA_DIR="+saDir, "HOME="+t.TempDir())
	p := &deployProcess{c: c, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	// What the kubelet sends when the pod is deleted.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", strings.Join(c.argv, " "), p.out.String())
		}
	})
	return p
}

// deployIdentityRE finds the Lease identity a run process announces.
var deployIdentityRE = regexp.MustCompile(`"Waiting for the lease before writing".*identity="([^"]+)"`)

func (p *deployProcess) identity() string {
	if m := deployIdentityRE.FindStringSubmatch(p.out.String()); m != nil {
		return m[1]
	}
	return ""
}

// TestDeployInClusterManifestsAutoscaleAsTheServiceAccount applies deploy/ and runs the
// Deployment's container command as local processes the way its pods run it: no kubeconfig,
// the ServiceAccount's token, CA and namespace where the kubelet mounts them, and the
// KUBERNETES_SERVICE_* environment, so client-go's in-cluster configuration connects them.
// It is not parallel: the Deployment runs `run -A`, which would reconcile every other
// test's HPAs.
func TestDeployInClusterManifestsAutoscaleAsTheServiceAccount(t *testing.T) {
	ctx := context.Background()
	rbacApplyRoles(t)
	if out, err := admin().Run(ctx, "apply", "--validate=strict", "-f", deployManifest); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", deployManifest, err, out)
	}
	cs := shared.Client()
	// The node stand-in plays the Deployment's pods: that they become ready shows the pod
	// template passes admission (the namespace enforces the restricted Pod Security level).
	// Then they are scaled to 0, since nothing runs in them here.
	eventually(t, 90*time.Second, "the Deployment's pods are admitted and ready", func(ctx context.Context) error {
		d, err := cs.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil || d.Status.ReadyReplicas != *d.Spec.Replicas {
			return fmt.Errorf("ready %d of %v; conditions %+v", d.Status.ReadyReplicas, d.Spec.Replicas, d.Status.Conditions)
		}
		return nil
	})
	dep, err := cs.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin().Run(ctx, "scale", "deployment", deployName, "-n", deployNamespace, "--replicas=0"); err != nil {
		t.Fatal(err)
	}
	replicas := int(*dep.Spec.Replicas)

	ns := namespace(t, "deploy")
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})

	tr, err := cs.CoreV1().ServiceAccounts(deployNamespace).CreateToken(ctx, deployServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saDir := t.TempDir()
	saEnv, err := shared.InClusterFiles(saDir, deployNamespace, tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	var procs []*deployProcess
	for i := range replicas {
		// Each replica's own address, as each pod has its own IP.
		procs = append(procs, deployStart(t, deployContainerFor(t, dep, fmt.Sprintf("127.0.0.%d", i+2)), saDir, saEnv))
	}
	t.Logf("running %d replicas as: %s", replicas, strings.Join(procs[0].c.argv, " "))

	waitSpecReplicas(t, ns, 4)

	for _, p := range procs {
		eventually(t, 30*time.Second, "/healthz answers 200 at "+p.c.healthz, func(ctx context.Context) error {
			return cluster.Probe(ctx, http.DefaultClient, p.c.healthz)
		})
	}
	lease, err := cs.CoordinationV1().Leases(deployNamespace).Get(ctx, "kubectl-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	holders := 0
	for _, p := range procs {
		id := p.identity()
		if id == "" {
			t.Errorf("a replica did not announce its lease identity:\n%s", p.out.String())
		}
		if id == holder {
			holders++
		}
	}
	if holders != 1 {
		t.Errorf("lease holder %q is held by %d of the replicas, want exactly 1", holder, holders)
	}

	sa := "system:serviceaccount:" + deployNamespace + ":" + deployServiceAccount
	scaled := false
	for _, w := range pluginWrites(t, mark, sa) {
		if w.Verb == "update" && w.Resource == "deployments" && w.Subresource == "scale" && w.Namespace == ns {
			scaled = true
		}
	}
	if !scaled {
		t.Errorf("no scale update by %s in %s", sa, ns)
	}
	rbacCheckAudit(t, mark, sa, rbacRunRole)
}
