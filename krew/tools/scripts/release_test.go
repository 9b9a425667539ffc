package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clone is a fresh clone of the repository's HEAD, with a clean tree.
func clone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kubectl-hpa")
	git(t, root(t), "clone", "-q", "--no-hardlinks", root(t), dir)
	return dir
}

// makeIn runs make in dir with args, isolated from any make running this test, and returns its
// output and error.
func makeIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, p := range []string{"MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=", "VERSION=", "DIST=", "BIN=", "PLATFORMS="} {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// listing is every path under dir, for comparing a directory before and after.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestReleaseRefusesBadInputWithOneLineAndLeavesDistAlone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, repo string)
		args    []string
		want    string
	}{
		{"dirty tree", func(t *testing.T, repo string) {
			if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, "release: the working tree is dirty; commit or stash first (git status)"},
		{"version without the leading v", nil, []string{"VERSION=1.2.3"}, "release: VERSION 1.2.3 is not semver vMAJOR.MINOR.PATCH[-pre] (krew requires the leading v)"},
		{"version that is not semver", nil, []string{"VERSION=v1.2"}, "release: VERSION v1.2 is not semver vMAJOR.MINOR.PATCH[-pre] (krew requires the leading v)"},
		// Only the linux/amd64 archive is built: the other five are missing.
		{"missing platform archive", nil, []string{"VERSION=v1.2.3", "PLATFORMS=linux/amd64"}, "release: missing platform archive kubectl-hpa_v1.2.3_linux_arm64.tar.gz"},
		{"archives with a stand-in payload", nil, []string{"VERSION=v1.2.3", "DIST_STANDIN=linux/arm64"}, "release: DIST_STANDIN is for the krew round trip only; a release packs every binary"},
		{"an image with a stand-in payload", nil, []string{"VERSION=v1.2.3", "IMAGE_STANDIN=linux/arm64"}, "release: IMAGE_STANDIN is for make test's image test only; a release packs every binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := clone(t)
			if tc.prepare != nil {
				tc.prepare(t, repo)
			}
			dist := filepath.Join(repo, "dist")
			if err := os.MkdirAll(dist, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dist, "earlier-release.txt"), []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := listing(t, dist)
			out, err := makeIn(repo, append([]string{"-s", "release"}, tc.args...)...)
			if err == nil {
				t.Fatalf("make release succeeded:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if i := slices.Index(lines, tc.want); i < 0 {
				t.Errorf("make release printed:\n%s\nwant the line %q", out, tc.want)
			} else if rest := lines[i+1:]; len(rest) > 1 || (len(rest) == 1 && !strings.HasPrefix(rest[0], "make: *** [Makefile:")) {
				t.Errorf("make release printed more after its one line: %q", rest)
			}
			if diff := slices.Compare(before, listing(t, dist)); diff != 0 {
				t.Errorf("dist/ changed: before %q, after %q", before, listing(t, dist))
			}
		})
	}
}

// TestMakeImageIsReproducible builds the image twice from the same commit, each time linking
// the binaries afresh into a bin directory of its own, and requires the same digest and the
// same oci-archive bytes; oci-image validates each build with go-containerregistry's validate.
// The image platforms make test does not build (of KREW_ROUNDTRIP_STANDIN) hold a stand-in
// payload: make test cross-compiles nothing, and the image is built and compared, not run.
func TestMakeImageIsReproducible(t *testing.T) {
	r := root(t)
	var imageStandin []string
	for _, p := range strings.Fields(os.Getenv("KREW_ROUNDTRIP_STANDIN")) {
		if strings.HasPrefix(p, "linux/") {
			imageStandin = append(imageStandin, p)
		}
	}
	var digests, archives []string
	for i := range 2 {
		dir := t.TempDir()
		out, err := makeIn(r, "image", "BIN="+filepath.Join(dir, "bin"), "DIST="+filepath.Join(dir, "dist"),
			"IMAGE_STANDIN="+strings.Join(imageStandin, " "))
		if err != nil {
			t.Fatalf("make image (build %d): %v\n%s", i+1, err, out)
		}
		d, err := os.ReadFile(filepath.Join(dir, "dist", "image.digest"))
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, strings.TrimSpace(string(d)))
		tars, _ := filepath.Glob(filepath.Join(dir, "dist", "kubectl-hpa_*_image.tar"))
		if len(tars) != 1 {
			t.Fatalf("build %d wrote image archives %q; want one", i+1, tars)
		}
		archives = append(archives, sha256sum(t, tars[0]))
	}
	t.Logf("image digest %s", digests[0])
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same commit have image digests %s and %s", digests[0], digests[1])
	}
	if archives[0] != archives[1] {
		t.Errorf("two builds of the same commit wrote different image archives (sha256 %s and %s)", archives[0], archives[1])
	}
}
