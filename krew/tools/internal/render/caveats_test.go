package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// clusterRole is the part of an RBAC ClusterRole the caveats restate.
type clusterRole struct {
	Metadata struct{ Name string }
	Rules    []struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	}
}

// caveatLines restates a role's rules one line each, in the role's order: the verbs, the
// resources, their API group and the names they are restricted to.
func caveatLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var role clusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var lines []string
	for _, r := range role.Rules {
		group := strings.Join(r.APIGroups, ", ")
		if group == "" {
			group = "core"
		}
		resources := strings.Join(r.Resources, ", ")
		if resources == "*" {
			resources = "all resources"
		}
		line := "* " + strings.Join(r.Verbs, ", ") + ": " + resources + " (" + group + ")"
		if len(r.ResourceNames) > 0 {
			line += " named " + strings.Join(r.ResourceNames, ", ")
		}
		lines = append(lines, line)
	}
	return lines
}

// TestCaveatsListExactlyWhatTheRolesGrant keeps krew/hpa.yaml's caveats, which krew shows at
// install, equal to deploy/rbac's roles: each role's rules, one line each, in order, and the
// command that prints each role.
func TestCaveatsListExactlyWhatTheRolesGrant(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "krew", "hpa.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n  caveats: |\n")
	if !ok {
		t.Fatal("krew/hpa.yaml has no caveats block")
	}
	block, _, _ := strings.Cut(after, "\n  platforms:")
	var got []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimPrefix(l, "    "); strings.HasPrefix(l, "* ") {
			got = append(got, l)
		}
	}
	var want []string
	// A krew user has the plugin, not deploy/rbac/: the caveats name the command that prints each role.
	for _, role := range []struct{ file, print string }{
		{"clusterrole-explain.yaml", "`kubectl hpa rbac explain`"},
		{"clusterrole-run.yaml", "`kubectl hpa rbac run`"},
	} {
		want = append(want, caveatLines(t, filepath.Join(root, "deploy", "rbac", role.file))...)
		if !strings.Contains(block, role.print) {
			t.Errorf("caveats do not say that %s prints the role of deploy/rbac/%s", role.print, role.file)
		}
	}
	if strings.Contains(block, "deploy/rbac") {
		t.Error("caveats name deploy/rbac/, which a krew user does not have; name kubectl hpa rbac instead")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("caveats' permission lines (-want from deploy/rbac, +got in krew/hpa.yaml):\n%s", diff)
	}
}
