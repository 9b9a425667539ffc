//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
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

// imageDirEnv names the directory `make e2e-image` fills: the image for this machine's platform
// unpacked (rootfs/), its config (config.json) and its index digest (digest).
const imageDirEnv = "KUBECTL_HPA_IMAGE_DIR"

// deployDigestRE is the digest of deploy/'s image reference, which make release renders.
var deployDigestRE = regexp.MustCompile(`(?m)^( *image: [^@\s]+)@sha256:[0-9a-f]{64}$`)

// ociConfig is the part of an OCI image config a runtime uses to start a container.
type ociConfig struct {
	Config struct {
		Entrypoint, Cmd, Env []string
		User, WorkingDir     string
	} `json:"config"`
}

// deployImage is the unpacked image of this machine's platform.
type deployImage struct {
	rootfs, digest string
	config         ociConfig
}

func loadDeployImage(t *testing.T) deployImage {
	t.Helper()
	dir := os.Getenv(imageDirEnv)
	if dir == "" {
		t.Fatalf("%s is not set: run the end-to-end tests with make test-e2e, which builds and unpacks the image (make e2e-image)", imageDirEnv)
	}
	img := deployImage{rootfs: filepath.Join(dir, "rootfs")}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &img.config); err != nil {
		t.Fatalf("parsing the image config: %v", err)
	}
	d, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		t.Fatal(err)
	}
	img.digest = strings.TrimSpace(string(d))
	return img
}

// renderDeployManifest writes deploy/kubectl-hpa.yaml with the image digest replaced by
// digest, as make release renders it.
func renderDeployManifest(t *testing.T, digest string) string {
	t.Helper()
	b, err := os.ReadFile(deployManifest)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(deployDigestRE.FindAll(b, -1)); n != 1 {
		t.Fatalf("%s has %d image references by digest; want 1", deployManifest, n)
	}
	out := filepath.Join(t.TempDir(), "kubectl-hpa.yaml")
	if err := os.WriteFile(out, deployDigestRE.ReplaceAll(b, []byte("${1}@"+digest)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// deployVarRef is a $(VAR) reference in a container's command or args.
var deployVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// deployContainer is the container of the applied Deployment made runnable here as the kubelet
// and the runtime would run it from the image: the command line (the container's command, else
// the image's entrypoint; the container's args, else the image's cmd, only when the command is
// the image's), with $(VAR) references expanded from the container's env; the environment (the
// image's, then the container's by name); and the user (the image's, overridden by runAsUser and
// runAsGroup).
type deployContainer struct {
	argv     []string
	env      []string
	uid, gid int
	// healthz is the liveness probe's URL for this process.
	healthz string
}

// deployContainerFor turns the Deployment's only container into a local process whose pod IP
// is podIP: env values and status.podIP field references are what the kubelet would give it.
func deployContainerFor(t *testing.T, dep *appsv1.Deployment, img ociConfig, podIP string) deployContainer {
	t.Helper()
	if n := len(dep.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	vars := map[string]string{}
	var dc deployContainer
	env := map[string]int{} // name -> index in dc.env
	setEnv := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := env[name]; ok {
			dc.env[i] = kv
			return
		}
		env[name] = len(dc.env)
		dc.env = append(dc.env, kv)
	}
	for _, kv := range img.Config.Env {
		setEnv(kv)
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			vars[e.Name] = podIP
		default:
			t.Fatalf("env %s: only values and status.podIP are emulated here", e.Name)
		}
		setEnv(e.Name + "=" + vars[e.Name])
	}
	if _, ok := env["HOME"]; !ok {
		setEnv("HOME=/") // what runtimes give a user without a passwd entry
	}
	expand := func(s string) string {
		return deployVarRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := vars[deployVarRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
	}
	command, args := c.Command, c.Args
	if len(command) == 0 {
		command = img.Config.Entrypoint
		if len(args) == 0 {
			args = img.Config.Cmd
		}
	}
	for _, a := range append(slices.Clone(command), args...) {
		dc.argv = append(dc.argv, expand(a))
	}
	if len(dc.argv) == 0 {
		t.Fatal("neither the container nor the image has a command")
	}
	if wd := img.Config.WorkingDir; wd != "" && wd != "/" {
		t.Fatalf("the image's working directory is %q; this emulation runs in /", wd)
	}
	// The image's user, numeric (there is no passwd file), then the pod's and the container's
	// securityContext.
	u, g, _ := strings.Cut(img.Config.User, ":")
	var err error
	if dc.uid, err = strconv.Atoi(u); err != nil {
		t.Fatalf("the image's user %q is not numeric", img.Config.User)
	}
	if dc.gid, err = strconv.Atoi(g); err != nil {
		dc.gid = 0
	}
	var overrides []struct{ user, group *int64 }
	if psc := dep.Spec.Template.Spec.SecurityContext; psc != nil {
		overrides = append(overrides, struct{ user, group *int64 }{psc.RunAsUser, psc.RunAsGroup})
	}
	if csc := c.SecurityContext; csc != nil {
		overrides = append(overrides, struct{ user, group *int64 }{csc.RunAsUser, csc.RunAsGroup})
	}
	for _, sc := range overrides {
		if sc.user != nil {
			dc.uid = int(*sc.user)
		}
		if sc.group != nil {
			dc.gid = int(*sc.group)
		}
	}
	if dc.uid == 0 {
		t.Fatal("the container would run as root; the pod requires runAsNonRoot")
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

// deployMountServiceAccount runs its arguments with the ServiceAccount files of $SA_DIR where
// the kubelet mounts them in the image's root $ROOTFS (a tmpfs over var/run/secrets, readable
// by all as the kubelet's 0644 default mode), in a mount namespace of its own, so the unpacked
// image is untouched but for the mount point the runtime would create too.
const deployMountServiceAccount = `sa="$ROOTFS/var/run/secrets/kubernetes.io/serviceaccount" && mkdir -p "$ROOTFS/var/run/secrets" && mount -t tmpfs tmpfs "$ROOTFS/var/run/secrets" && mkdir -p "$sa" && cp "$SA_DIR"/token "$SA_DIR"/ca.crt "$SA_DIR"/namespace "$sa"/ && chmod 0644 "$sa"/* && exec "$@"`

// deployStart runs one replica as the pod would: no kubeconfig, only the in-cluster
// environment and ServiceAccount files (saEnv, saDir), so client-go's in-cluster
// configuration is what connects it.
func deployStart(t *testing.T, c deployContainer, rootfs, saDir string, saEnv []string) *deployProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The binary is the image's: chroot into the unpacked image as the container's user, with
	// only the container's environment (env -i), as the runtime starts it. unshare, sh, env and
	// chroot exec one another, so signals reach it directly.
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	run := append([]string{"env", "-i"}, append(c.env, saEnv...)...)
	run = append(run, chroot, fmt.Sprintf("--userspec=%d:%d", c.uid, c.gid), "--groups=", rootfs)
	run = append(run, c.argv...)
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", deployMountServiceAccount, "sh"}, run...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SA_DIR=" + saDir, "ROOTFS=" + rootfs}
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

// deployIdentityRE finds the Lease identity a run process announces, holder or standby.
var deployIdentityRE = regexp.MustCompile(`(?:acquired Lease \S+ as |this run \()([^ :)]+)`)

func (p *deployProcess) identity() string {
	if m := deployIdentityRE.FindStringSubmatch(p.out.String()); m != nil {
		return m[1]
	}
	return ""
}

// TestDeployInClusterManifestsAutoscaleAsTheServiceAccount applies deploy/, rendered with the
// digest of the image make e2e-image built, and runs the Deployment's container from that image
// as local processes the way its pods run it: the image's binary, entrypoint, user and
// environment combined with the Deployment's as the kubelet does, no kubeconfig,
// the ServiceAccount's token, CA and namespace where the kubelet mounts them, and the
// KUBERNETES_SERVICE_* environment, so client-go's in-cluster configuration connects them.
// It is not parallel: the Deployment runs `run -A`, which would reconcile every other
// test's HPAs.
func TestDeployInClusterManifestsAutoscaleAsTheServiceAccount(t *testing.T) {
	ctx := context.Background()
	img := loadDeployImage(t)
	rbacApplyRoles(t)
	manifest := renderDeployManifest(t, img.digest)
	if out, err := admin().Run(ctx, "apply", "--validate=strict", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply -f %s (rendered with the image digest): %v\n%s", deployManifest, err, out)
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
	if image := dep.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, "@"+img.digest) {
		t.Errorf("the Deployment's image is %s; want it by the built digest %s", image, img.digest)
	}

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
		procs = append(procs, deployStart(t, deployContainerFor(t, dep, img.config, fmt.Sprintf("127.0.0.%d", i+2)), img.rootfs, saDir, saEnv))
	}
	t.Logf("running %d replicas of image %s as %d:%d: %s (env %s)", replicas, img.digest, procs[0].c.uid, procs[0].c.gid,
		strings.Join(procs[0].c.argv, " "), strings.Join(procs[0].c.env, " "))

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
		// Both replicas may try to create the Lease at once: the one refused announces itself
		// only at its next attempt, a retry period (2 s, jittered) later.
		eventually(t, 30*time.Second, "each replica announces its Lease identity", func(context.Context) error {
			if p.identity() == "" {
				return fmt.Errorf("a replica did not announce its lease identity:\n%s", p.out.String())
			}
			return nil
		})
		id := p.identity()
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
