package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// The ClusterRoles in deploy/rbac/ that hold every permission of each command.
const (
	ExplainRole = "kubectl-hpa-explain"
	RunRole     = "kubectl-hpa-run"
)

// Permission is one RBAC permission: a verb on a resource (and subresource) of an API group,
// in a namespace ("" for all namespaces), optionally on one named object.
type Permission struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

// String is what a user reads and a cluster admin grants, e.g.
// `update horizontalpodautoscalers/status (autoscaling) in namespace "shop"`.
func (p Permission) String() string {
	var b strings.Builder
	b.WriteString(p.Verb + " " + p.Resource)
	if p.Subresource != "" {
		b.WriteString("/" + p.Subresource)
	}
	group := p.Group
	if group == "" {
		group = "core"
	}
	b.WriteString(" (" + group + ")")
	if p.Name != "" {
		fmt.Fprintf(&b, " named %q", p.Name)
	}
	if p.Namespace == "" {
		b.WriteString(" in all namespaces")
	} else {
		fmt.Fprintf(&b, " in namespace %q", p.Namespace)
	}
	return b.String()
}

// forbiddenRE reads the permission out of the API server's Forbidden message (the format of
// k8s.io/apiserver's forbiddenMessage, stable since RBAC went GA).
var forbiddenRE = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

// deniedPermission extracts who was denied which permission from a Forbidden error.
func deniedPermission(err error) (p Permission, user string, ok bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return Permission{}, "", false
	}
	st := status.Status()
	m := forbiddenRE.FindStringSubmatch(st.Message)
	if m == nil {
		return Permission{}, "", false
	}
	p = Permission{Verb: m[2], Group: m[4], Namespace: m[5]}
	p.Resource, p.Subresource, _ = strings.Cut(m[3], "/")
	if st.Details != nil {
		p.Name = st.Details.Name
	}
	return p, m[1], true
}

// forbiddenError is a Forbidden API error rendered as the one permission that was missing.
type forbiddenError struct {
	doing string
	perm  Permission
	user  string
	role  string
	err   error
}

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("%s: forbidden: user %q lacks the permission to %s; ask your cluster admin to grant it (%s)",
		e.doing, e.user, e.perm, roleHint(e.role))
}

func (e *forbiddenError) Unwrap() error { return e.err }

// MissingPermissionsError lists what a SelfSubjectAccessReview preflight found denied:
// Command ("kubectl hpa run") lacks Missing, which Role holds.
type MissingPermissionsError struct {
	Command string
	Missing []Permission
	Role    string
}

func (e *MissingPermissionsError) Error() string {
	names := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		names[i] = p.String()
	}
	them := "it"
	if len(names) > 1 {
		them = "them"
	}
	return fmt.Sprintf("%s is not allowed to %s; ask your cluster admin to grant %s (%s)",
		e.Command, strings.Join(names, "; "), them, roleHint(e.Role))
}

// roleHint names the ClusterRole holding a command's permissions and the command that prints
// it: a krew user has the plugin, not the repository's deploy/rbac/.
func roleHint(role string) string {
	return fmt.Sprintf("the ClusterRole %s holds every permission this command uses; kubectl hpa rbac %s prints it", role, strings.TrimPrefix(role, "kubectl-hpa-"))
}

// preflightParallelism bounds the SelfSubjectAccessReviews in flight at once.
const preflightParallelism = 8

// Denied asks the API server, one SelfSubjectAccessReview each, whether the current user may
// do perms, and returns the denied ones in the order given. Every authenticated user may create
// SelfSubjectAccessReviews (system:basic-user); they change nothing.
func Denied(ctx context.Context, client authorizationv1client.SelfSubjectAccessReviewsGetter, perms []Permission) ([]Permission, error) {
	allowed := make([]bool, len(perms))
	errs := make([]error, len(perms))
	sem := make(chan struct{}, preflightParallelism)
	var wg sync.WaitGroup
	for i, p := range perms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name,
				},
			}}
			got, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("asking whether we may %s: %w", p, err)
				return
			}
			allowed[i] = got.Status.Allowed
		})
	}
	wg.Wait()
	// One failure usually means all fail alike; the first says enough.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var denied []Permission
	for i, p := range perms {
		if !allowed[i] {
			denied = append(denied, p)
		}
	}
	return denied, nil
}
