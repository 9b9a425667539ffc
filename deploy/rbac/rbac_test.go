package rbac

import (
	"os"
	"path/filepath"
	"slices"
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
