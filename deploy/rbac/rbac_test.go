package rbac

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRolesAreTheClusterRoleFilesOfThisDirectory keeps the embedded roles equal to the files a
// user applies with kubectl apply -f deploy/rbac/, and one Role per file.
func TestRolesAreTheClusterRoleFilesOfThisDirectory(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, r := range Roles() {
		embedded = append(embedded, r.File)
		want, err := os.ReadFile(r.File)
		if err != nil {
			t.Fatal(err)
		}
		if r.Manifest != string(want) {
			t.Errorf("the embedded manifest of %s differs from the file", r.File)
		}
	}
	slices.Sort(embedded)
	if !slices.Equal(embedded, files) {
		t.Errorf("Roles() embeds %v; the YAML files of deploy/rbac/ are %v", embedded, files)
	}
}

// rule is one rule of a ClusterRole, as its file writes it.
type rule struct {
	groups, resources, names, verbs []string
}

// rulesOf reads the rules of a role file: each "- apiGroups: [...]" with the resources,
// resourceNames and verbs lines under it (the files' one style; kubectl apply checks the YAML).
func rulesOf(t *testing.T, manifest string) []rule {
	t.Helper()
	list := func(line string) []string {
		_, v, _ := strings.Cut(line, ":")
		v = strings.Trim(strings.TrimSpace(v), "[]")
		var out []string
		for _, x := range strings.Split(v, ",") {
			out = append(out, strings.Trim(strings.TrimSpace(x), `"`))
		}
		return out
	}
	var out []rule
	for _, line := range strings.Split(manifest, "\n") {
		switch l := strings.TrimSpace(line); {
		case strings.HasPrefix(l, "- apiGroups:"):
			out = append(out, rule{groups: list(l)})
		case len(out) == 0:
		case strings.HasPrefix(l, "resources:"):
			out[len(out)-1].resources = list(l)
		case strings.HasPrefix(l, "resourceNames:"):
			out[len(out)-1].names = list(l)
		case strings.HasPrefix(l, "verbs:"):
			out[len(out)-1].verbs = list(l)
		}
	}
	if len(out) == 0 {
		t.Fatal("no rule read")
	}
	return out
}

// TestTheREADMETableSaysEveryRuleOfTheRoles holds README.md's table ("What each role grants and
// why") to the roles: every group, resource, verb and resource name a role grants is in a row
// of its column.
func TestTheREADMETableSaysEveryRuleOfTheRoles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 7 || strings.TrimSpace(cells[1]) == "API group" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells[1:6])
	}
	if len(rows) == 0 {
		t.Fatal("README.md has no table of API group, resource, explain, run, used for")
	}
	for col, r := range Roles() {
		for _, ru := range rulesOf(t, r.Manifest) {
			for _, g := range ru.groups {
				if g == "" {
					g = `""`
				}
				for _, res := range ru.resources {
					base, sub, _ := strings.Cut(res, "/")
					for _, verb := range ru.verbs {
						found := slices.ContainsFunc(rows, func(row []string) bool {
							ok := slices.Contains(strings.Split(row[0], ", "), g) && strings.Contains(row[1], base) &&
								(sub == "" || strings.Contains(row[1], "/"+sub)) && strings.Contains(row[2+col], verb)
							for _, n := range ru.names {
								ok = ok && strings.Contains(row[1]+row[2+col], n)
							}
							return ok
						})
						if !found {
							t.Errorf("README.md's table has no row granting %s %s %s (%s) named %v to %s", r.File, verb, res, g, ru.names, r.Command)
						}
					}
				}
			}
		}
	}
}
