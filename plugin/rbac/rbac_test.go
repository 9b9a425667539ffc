package rbac

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

func readRoleFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrintsTheFilesOfDeployRBACAsDocumentsKubectlApplies checks what kubectl hpa rbac prints
// against the files of deploy/rbac/, byte for byte, and that each document is the ClusterRole the
// permission errors name.
func TestPrintsTheFilesOfDeployRBACAsDocumentsKubectlApplies(t *testing.T) {
	explain, run := readRoleFile(t, "clusterrole-explain.yaml"), readRoleFile(t, "clusterrole-run.yaml")
	for _, tc := range []struct {
		name      string
		args      []string
		want      string
		wantRoles []string
	}{
		{"without an argument, both roles", nil, explain + "---\n" + run, []string{cmdutil.ExplainRole, cmdutil.RunRole}},
		{"explain's role", []string{"explain"}, explain, []string{cmdutil.ExplainRole}},
		{"run's role", []string{"run"}, run, []string{cmdutil.RunRole}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewCmdRBAC(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("kubectl hpa rbac %s: %v", strings.Join(tc.args, " "), err)
			}
			if out.String() != tc.want {
				t.Errorf("kubectl hpa rbac %s printed:\n%s\nwant the files of deploy/rbac/:\n%s", strings.Join(tc.args, " "), out.String(), tc.want)
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr: %q; want nothing", errOut.String())
			}
			var got []string
			dec := yaml.NewYAMLOrJSONDecoder(&out, 4096)
			for {
				var role rbacv1.ClusterRole
				err := dec.Decode(&role)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("decoding a printed document: %v", err)
				}
				if role.Kind != "ClusterRole" || role.APIVersion != "rbac.authorization.k8s.io/v1" || len(role.Rules) == 0 {
					t.Errorf("printed %s %s %q with %d rules; want a ClusterRole of rbac.authorization.k8s.io/v1 with rules", role.APIVersion, role.Kind, role.Name, len(role.Rules))
				}
				got = append(got, role.Name)
			}
			if strings.Join(got, " ") != strings.Join(tc.wantRoles, " ") {
				t.Errorf("printed the roles %q; want %q", got, tc.wantRoles)
			}
		})
	}
}
