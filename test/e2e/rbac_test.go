//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// The least-privilege roles of deploy/rbac, applied once per cluster with the real kubectl.
const (
	rbacExplainRole = "kubectl-hpa-explain"
	rbacRunRole     = "kubectl-hpa-run"
)

var rbacRolesDir = filepath.Join("..", "..", "deploy", "rbac")

// rbacApplied applies deploy/rbac/ once; every test using the roles waits for it.
var rbacApplied = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return admin().Run(ctx, "apply", "--validate=strict", "-f", rbacRolesDir)
})

func rbacApplyRoles(t *testing.T) {
	t.Helper()
	if out, err := rbacApplied(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", rbacRolesDir, err, out)
	}
}

// rbacUser returns a kubectl authenticated by a client certificate as user, in no group that
// holds any permission: only what the test binds applies.
func rbacUser(t *testing.T, user string) cluster.Kubectl {
	t.Helper()
	kubeconfig, err := shared.RbacUserKubeconfig(user, "e2e:rbac")
	if err != nil {
		t.Fatal(err)
	}
	k := plugin()
	k.Kubeconfig = kubeconfig
	return k
}

// rbacBind binds role to subject: a RoleBinding in ns, or a ClusterRoleBinding when ns is "".
func rbacBind(t *testing.T, ns, role string, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	name := strings.NewReplacer(":", "-", "/", "-").Replace(fmt.Sprintf("rbac-%s-%s-%s", role, subject.Kind, subject.Name))
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	rbac := shared.Client().RbacV1()
	if ns != "" {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		if _, err := rbac.RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	rbacWaitEffective(t, ns, role, subject)
}

// rbacWaitEffective waits until the API server's authorizer grants subject every permission
// of role in ns (cluster-wide when ns is ""): it reads roles and bindings from a cache, so a
// command run right after the binding's creation could still be refused.
func rbacWaitEffective(t *testing.T, ns, role string, subject rbacv1.Subject) {
	t.Helper()
	r, err := shared.Client().RbacV1().ClusterRoles().Get(context.Background(), role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := authorizationv1.SubjectAccessReviewSpec{User: subject.Name}
	if subject.Kind == rbacv1.ServiceAccountKind {
		spec.User = "system:serviceaccount:" + subject.Namespace + ":" + subject.Name
		spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + subject.Namespace}
	}
	var attrs []authorizationv1.ResourceAttributes
	for _, rule := range r.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					resource, sub, _ := strings.Cut(res, "/")
					a := authorizationv1.ResourceAttributes{Namespace: ns, Group: g, Resource: resource, Subresource: sub, Verb: v}
					if len(rule.ResourceNames) > 0 {
						a.Name = rule.ResourceNames[0]
					}
					attrs = append(attrs, a)
				}
			}
		}
	}
	// A permission once granted is not asked again.
	eventually(t, 30*time.Second, fmt.Sprintf("the authorizer grants %s %s's permissions", spec.User, role), func(ctx context.Context) error {
		for ; len(attrs) > 0; attrs = attrs[1:] {
			a := attrs[0]
			spec.ResourceAttributes = &a
			sar, err := shared.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("%s %s/%s in %q not allowed yet: %s", a.Verb, a.Group, a.Resource, ns, sar.Status.Reason)
			}
		}
		return nil
	})
}

func rbacUserSubject(user string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}
}

// rbacRoleWithout creates a copy of role named name without verb on group/resource, for a
// user who lacks exactly that permission.
func rbacRoleWithout(t *testing.T, role, name, group, resource, verb string) {
	t.Helper()
	ctx := context.Background()
	base, err := shared.Client().RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cut := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	removed := false
	for _, r := range base.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			removed = true
			r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
			if len(r.Verbs) == 0 {
				continue
			}
		}
		cut.Rules = append(cut.Rules, r)
	}
	if !removed {
		t.Fatalf("role %s has no rule granting %s on %s in group %q", role, verb, resource, group)
	}
	if _, err := shared.Client().RbacV1().ClusterRoles().Create(ctx, cut, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Client().RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// rbacResult is one finished kubectl invocation.
type rbacResult struct {
	stdout, stderr string
	code           int
}

// rbacExec runs kubectl with args and returns its streams and exit code.
func rbacExec(t *testing.T, k cluster.Kubectl, timeout time.Duration, args ...string) rbacResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := k.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := rbacResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		res.code = exit.ExitCode()
	default:
		t.Fatalf("kubectl %s: %v\nstderr:\n%s", strings.Join(args, " "), err, res.stderr)
	}
	return res
}

// rbacRuleAllows reports whether rules grant the request r (what RBAC itself decides, for the
// rule forms deploy/rbac uses: exact or "*" groups and resources, "*/scale"-style
// subresources, optional resourceNames).
func rbacRuleAllows(rules []rbacv1.PolicyRule, r cluster.AuditRequest) bool {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	for _, rule := range rules {
		verbOK := slices.Contains(rule.Verbs, r.Verb) || slices.Contains(rule.Verbs, rbacv1.VerbAll)
		groupOK := slices.Contains(rule.APIGroups, r.APIGroup) || slices.Contains(rule.APIGroups, rbacv1.APIGroupAll)
		resOK := slices.Contains(rule.Resources, res) || slices.Contains(rule.Resources, rbacv1.ResourceAll) ||
			(r.Subresource != "" && slices.Contains(rule.Resources, "*/"+r.Subresource))
		nameOK := len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.Name)
		if verbOK && groupOK && resOK && nameOK {
			return true
		}
	}
	return false
}

// rbacCheckAudit requires that user's requests since mark were all granted, and all allowed
// by role's rules; it logs the (apiGroup, resource/subresource, verb) tuples it saw.
func rbacCheckAudit(t *testing.T, mark cluster.AuditMark, user, role string) []string {
	t.Helper()
	cr, err := shared.Client().RbacV1().ClusterRoles().Get(context.Background(), role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		if r.Code == 403 {
			t.Errorf("%s was refused a request with role %s: %s", user, role, r)
		}
		// Discovery (no objectRef) and access reviews are every authenticated user's.
		if r.Resource == "" || r.APIGroup == "authorization.k8s.io" {
			continue
		}
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		seen[fmt.Sprintf("(%q, %s, %s)", r.APIGroup, res, r.Verb)] = true
		if !rbacRuleAllows(cr.Rules, r) {
			t.Errorf("%s made a request role %s does not grant: %s", user, role, r)
		}
	}
	var tuples []string
	for k := range seen {
		tuples = append(tuples, k)
	}
	sort.Strings(tuples)
	t.Logf("%s (role %s) issued (apiGroup, resource, verb):\n  %s", user, role, strings.Join(tuples, "\n  "))
	if len(tuples) == 0 {
		t.Errorf("no requests by %s in the audit log", user)
	}
	return tuples
}

func TestRbacLeastPrivilegeRolesAreEnoughForExplainAndRun(t *testing.T) {
	t.Parallel()
	rbacApplyRoles(t)
	ns := namespace(t, "rbac")
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})

	explainUser, dryRunUser, runUser := "e2e:rbac-explain-"+ns, "e2e:rbac-dry-run-"+ns, "e2e:rbac-run-"+ns
	// explain reads Heapster through kube-system's service proxy, so its binding is cluster-wide;
	// the two runs are bound to their namespace only.
	rbacBind(t, "", rbacExplainRole, rbacUserSubject(explainUser))
	rbacBind(t, ns, rbacExplainRole, rbacUserSubject(dryRunUser))
	rbacBind(t, ns, rbacRunRole, rbacUserSubject(runUser))
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}

	for _, source := range []string{"metrics-api", "heapster"} {
		t.Run("explain from "+source, func(t *testing.T) {
			// Until the source has the pods' metrics the HPA cannot compute, and explain
			// exits ExitCannotCompute (10); Heapster's samples span a 60s window.
			if source == "metrics-api" {
				waitMetricsAfterReadiness(t, ns)
			} else {
				hrWaitPods(t, cluster.HeapsterService, ns, 90)
			}
			res := rbacExec(t, rbacUser(t, explainUser), time.Minute, "hpa", "explain", "web", "-n", ns, "--metrics-source="+source, "-o", "json")
			if res.code != 0 {
				t.Fatalf("explain exited %d:\n%s", res.code, res.stderr)
			}
			var e v1alpha1.Explanation
			if err := json.Unmarshal([]byte(res.stdout), &e); err != nil {
				t.Fatalf("decoding explain output: %v\n%s", err, res.stdout)
			}
			if e.Error != nil || e.Decision == nil {
				t.Errorf("explanation has error %+v, decision %+v", e.Error, e.Decision)
			}
		})
	}
	t.Run("run --dry-run=client", func(t *testing.T) {
		r := startRun(t, rbacUser(t, dryRunUser), "-n", ns, "--dry-run=client", "--sync-period=2s", "-o", "json")
		eventually(t, time.Minute, "the dry run reports a decision", func(context.Context) error {
			if out := r.out.String(); !strings.Contains(out, `"desiredReplicas":4`) {
				return fmt.Errorf("output so far:\n%s", out)
			}
			return nil
		})
		r.stop()
	})
	t.Run("run autoscales", func(t *testing.T) {
		r := startRun(t, rbacUser(t, runUser), "-n", ns, "--sync-period=2s", "-o", "json")
		waitSpecReplicas(t, ns, 4)
		r.stop()
	})

	rbacCheckAudit(t, mark, explainUser, rbacExplainRole)
	rbacCheckAudit(t, mark, dryRunUser, rbacExplainRole)
	tuples := rbacCheckAudit(t, mark, runUser, rbacRunRole)
	for _, user := range []string{explainUser, dryRunUser} {
		if w := pluginWrites(t, mark, user); len(w) != 0 {
			t.Errorf("%s wrote with the read-only role:\n%s", user, cluster.SummarizeAudit(w))
		}
	}
	for _, want := range []string{
		`("autoscaling", horizontalpodautoscalers/status, update)`, `("apps", deployments/scale, update)`,
		`("coordination.k8s.io", leases, create)`, `("", events, create)`, `("metrics.k8s.io", pods, list)`,
	} {
		if !slices.Contains(tuples, want) {
			t.Errorf("run did not issue %s; it issued:\n%s", want, strings.Join(tuples, "\n"))
		}
	}
}

func TestRbacMissingPermissionIsNamedInOneLine(t *testing.T) {
	t.Parallel()
	rbacApplyRoles(t)
	ns := namespace(t, "rbac-missing")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	createHPA(t, ns, hpaSpec{})

	tests := []struct {
		name                   string
		role                   string
		group, resource, verb  string
		args                   []string
		wantCode               int
		wantPermission         string
		errorLineIsWholeStderr bool
	}{
		{name: "run without update on horizontalpodautoscalers/status", role: rbacRunRole,
			group: "autoscaling", resource: "horizontalpodautoscalers/status", verb: "update",
			args:     []string{"hpa", "run", "-n", ns, "--sync-period=2s"},
			wantCode: 7, wantPermission: fmt.Sprintf(`update horizontalpodautoscalers/status (autoscaling) in namespace %q`, ns)},
		{name: "run without the metrics API", role: rbacRunRole,
			group: "metrics.k8s.io", resource: "pods", verb: "list",
			args:     []string{"hpa", "run", "-n", ns, "--sync-period=2s"},
			wantCode: 7, wantPermission: fmt.Sprintf(`list pods (metrics.k8s.io) in namespace %q`, ns)},
		{name: "explain without the metrics API", role: rbacExplainRole,
			group: "metrics.k8s.io", resource: "pods", verb: "list",
			args:     []string{"hpa", "explain", "web", "-n", ns, "--metrics-source=metrics-api"},
			wantCode: 7, wantPermission: fmt.Sprintf(`list pods (metrics.k8s.io) in namespace %q`, ns), errorLineIsWholeStderr: true},
		{name: "explain without get on horizontalpodautoscalers", role: rbacExplainRole,
			group: "autoscaling", resource: "horizontalpodautoscalers", verb: "get",
			args:     []string{"hpa", "explain", "web", "-n", ns},
			wantCode: 7, wantPermission: fmt.Sprintf(`get horizontalpodautoscalers (autoscaling) named "web" in namespace %q`, ns), errorLineIsWholeStderr: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			user := fmt.Sprintf("e2e:rbac-missing-%d-%s", i, ns)
			role := fmt.Sprintf("rbac-missing-%d-%s", i, ns)
			rbacRoleWithout(t, tc.role, role, tc.group, tc.resource, tc.verb)
			rbacBind(t, ns, role, rbacUserSubject(user))
			mark, err := shared.AuditMark()
			if err != nil {
				t.Fatal(err)
			}
			res := rbacExec(t, rbacUser(t, user), time.Minute, tc.args...)
			if res.code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", res.code, tc.wantCode, res.stderr)
			}
			var errLines []string
			for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
				if strings.HasPrefix(l, "error: ") {
					errLines = append(errLines, l)
				}
			}
			if len(errLines) != 1 || !strings.Contains(errLines[0], tc.wantPermission) {
				t.Errorf("want one error line naming %s; stderr:\n%s", tc.wantPermission, res.stderr)
			}
			if tc.errorLineIsWholeStderr && strings.TrimSpace(res.stderr) != strings.TrimSpace(strings.Join(errLines, "")) {
				t.Errorf("stderr is more than the one error line:\n%s", res.stderr)
			}
			if w := pluginWrites(t, mark, user); len(w) != 0 {
				t.Errorf("%s wrote before failing:\n%s", user, cluster.SummarizeAudit(w))
			}
		})
	}
}
