package scripts

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// semver is semver 2.0's grammar with the leading v krew requires (build metadata excluded: krew
// and the image labels have no use for it).
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)

// root is the repository root, two levels above krew/tools.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository with one commit and returns it and the commit's short hash.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "f")
	git(t, dir, "commit", "-q", "-m", "one")
	return dir, git(t, dir, "rev-parse", "--short", "HEAD")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return run(t, dir, []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}, "git", append([]string{"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
}

func TestVersionScriptDerivesSemverFromGit(t *testing.T) {
	script := filepath.Join(root(t), "hack", "version.sh")
	for _, tc := range []struct {
		name string
		// prepare changes the repository and returns the version wanted, given HEAD's short hash.
		prepare func(t *testing.T, dir, commit string) string
	}{
		{"untagged commit is v0.0.0-<commit>", func(t *testing.T, dir, commit string) string {
			return "v0.0.0-" + commit
		}},
		{"tag at HEAD is the version", func(t *testing.T, dir, commit string) string {
			git(t, dir, "tag", "v1.2.3")
			return "v1.2.3"
		}},
		{"pre-release tag at HEAD is the version", func(t *testing.T, dir, commit string) string {
			git(t, dir, "tag", "-a", "-m", "rc", "v1.3.0-rc.1")
			return "v1.3.0-rc.1"
		}},
		{"commits after a tag are a pre-release of it", func(t *testing.T, dir, commit string) string {
			git(t, dir, "tag", "v1.2.3")
			git(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
			return "v1.2.3-1-g" + git(t, dir, "rev-parse", "--short", "HEAD")
		}},
		{"a tag that is not semver is ignored", func(t *testing.T, dir, commit string) string {
			git(t, dir, "tag", "release-1")
			git(t, dir, "tag", "v1.2")
			return "v0.0.0-" + commit
		}},
		{"dirty tree is marked", func(t *testing.T, dir, commit string) string {
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "v0.0.0-" + commit + "-dirty"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, commit := gitRepo(t)
			want := tc.prepare(t, dir, commit)
			got := run(t, dir, nil, script, dir)
			if got != want {
				t.Errorf("hack/version.sh = %q; want %q", got, want)
			}
			if !semver.MatchString(got) {
				t.Errorf("hack/version.sh = %q; not semver with a leading v", got)
			}
		})
	}
}

func TestMakefileVersionDefaultsToSemver(t *testing.T) {
	r := root(t)
	t.Setenv("VERSION", "")
	os.Unsetenv("VERSION") // the default applies only when VERSION is not set at all
	got := run(t, r, []string{"MAKEFLAGS="}, "make", "-s", "--no-print-directory", "--eval", "print-version: ; @echo $(VERSION)", "print-version")
	if !semver.MatchString(got) {
		t.Errorf("make's default VERSION = %q; want semver with a leading v (krew rejects anything else)", got)
	}
	if want := run(t, r, nil, filepath.Join(r, "hack", "version.sh")); got != want {
		t.Errorf("make's default VERSION = %q; hack/version.sh says %q", got, want)
	}
}

func sha256sum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
