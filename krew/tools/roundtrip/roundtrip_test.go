// Package roundtrip checks a release the way users receive it: `make dist` and
// `make krew-manifest` run for the build's version (VERSION, as make test builds it, so the
// binaries in bin/<os>_<arch>/ are reused) into a temporary directory, krew's own
// validate-krew-manifest accepts the manifest, and krew v0.4.3 installs every platform's archive
// (offline, through --archive, or from a local clone of the custom index served by a 127.0.0.1
// server), after which the real kubectl runs the installed plugin. The upgrade from an older
// version, built for this machine's platform only, goes through the index as a user's does.
//
// KREW_ROUNDTRIP_STANDIN (make test-krew sets it to the Makefile's TEST_STANDIN_PLATFORMS: on
// linux/amd64 the other five) names platforms whose archive make dist packs with a
// stand-in payload (make dist DIST_STANDIN=...): a text file under the binary's name, mode
// 0755, instead of the cross-built binary. For those platforms the test checks what it checks
// of every foreign platform, which krew can install but this machine cannot run: the archive's
// name, entries, modes, times and checksum, the manifest's entry, krew's install of it and its
// refusals. Whether the plugin compiles there, make verify checks (hack/typecheck-platforms.sh);
// make dist and make release always pack the real binaries. Unset, every archive holds its
// real binary, built here.
package roundtrip

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// version is the release the test builds (make's VERSION); the Makefile's ldflags put it into
// the binaries.
var version string

// standin is KREW_ROUNDTRIP_STANDIN: the platforms whose archives hold a stand-in payload.
var standin = strings.Fields(os.Getenv("KREW_ROUNDTRIP_STANDIN"))

// oldVersion is the release the upgrade starts from: below any version hack/version.sh derives
// (a numeric pre-release identifier sorts before an alphanumeric one, and v0.0.0-0 before any
// v0.0.0-N with N > 0 and any later release).
const oldVersion = "v0.0.0-0.upgrade-from"

type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

func (p platform) archive() string { return p.archiveOf(version) }

func (p platform) archiveOf(v string) string {
	ext := "tar.gz"
	if p.os == "windows" {
		ext = "zip"
	}
	return fmt.Sprintf("kubectl-hpa_%s_%s_%s.%s", v, p.os, p.arch, ext)
}

func (p platform) bin() string {
	if p.os == "windows" {
		return "kubectl-hpa.exe"
	}
	return "kubectl-hpa"
}

// platforms are those a release supports; the manifest must offer each and only these.
var platforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// release is what TestMain built once for every test.
type release struct {
	root     string // repository root
	tools    string // krew, validate-krew-manifest (and the dist tools), cached by hack/krew-tools.sh
	dist     string // archives, checksums.txt, hpa.yaml
	manifest string // dist/hpa.yaml
	oldDist  string // oldVersion's archive for this machine
	oldBin   string // the BIN directory holding oldVersion's binary for this machine
	commit   string // short commit the binaries report
	mtime    time.Time
}

var rel release

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roundtrip setup: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// setup builds the krew tools first, then the release through the Makefile, runs the tests and
// removes what it built.
func setup(m *testing.M) (int, error) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		return 0, err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.HasPrefix(gomod, []byte("module github.com/kubectl-hpa/kubectl-hpa\n")) {
		return 0, fmt.Errorf("%s is not the kubectl-hpa repository root (go.mod: %v)", root, err)
	}
	work, err := os.MkdirTemp("", "krew-roundtrip-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(work)
	rel = release{root: root, dist: filepath.Join(work, "dist"), oldDist: filepath.Join(work, "old"), oldBin: filepath.Join(work, "old-bin")}
	rel.manifest = filepath.Join(rel.dist, "hpa.yaml")
	if version = os.Getenv("VERSION"); version == "" {
		out, err := command(root, nil, filepath.Join(root, "hack", "version.sh")).Output()
		if err != nil {
			return 0, fmt.Errorf("hack/version.sh: %w", err)
		}
		version = strings.TrimSpace(string(out))
	}

	start := time.Now()
	out, err := command(root, nil, filepath.Join(root, "hack", "krew-tools.sh")).Output()
	if err != nil {
		return 0, fmt.Errorf("building krew tools: %w\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	rel.tools = lines[len(lines)-1]
	fmt.Fprintf(os.Stderr, "roundtrip: krew tools ready in %s (%s)\n", time.Since(start).Round(time.Millisecond), rel.tools)
	host := runtime.GOOS + "/" + runtime.GOARCH
	if slices.Contains(standin, host) {
		return 0, fmt.Errorf("KREW_ROUNDTRIP_STANDIN=%q names this machine's platform, whose binary the test runs", strings.Join(standin, " "))
	}
	start = time.Now()
	if out, err := makeTargets(rel.dist, version, "dist", "krew-manifest"); err != nil {
		return 0, fmt.Errorf("make dist krew-manifest: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "roundtrip: make dist krew-manifest %s in %s (stand-in payloads: %q)\n", version, time.Since(start).Round(time.Millisecond), standin)
	// The upgrade needs the old version on this machine only: one more build, not six, into a
	// bin directory of its own so that bin/ keeps the current version's binaries.
	start = time.Now()
	if out, err := makeTargets(rel.oldDist, oldVersion, "PLATFORMS="+host, "BIN="+rel.oldBin, "dist"); err != nil {
		return 0, fmt.Errorf("make dist %s: %w\n%s", oldVersion, err, out)
	}
	fmt.Fprintf(os.Stderr, "roundtrip: make dist %s for %s in %s\n", oldVersion, host, time.Since(start).Round(time.Millisecond))

	commit, err := command(root, nil, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return 0, fmt.Errorf("reading the commit: %w", err)
	}
	rel.commit = strings.TrimSpace(string(commit))
	ct, err := command(root, nil, "git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		return 0, fmt.Errorf("reading the commit time: %w", err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(ct)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing the commit time %q: %w", ct, err)
	}
	rel.mtime = time.Unix(secs, 0).UTC()
	return m.Run(), nil
}

// makeTargets runs the repository's Makefile for version into dist with the tools built already,
// isolated from any make that runs this test (its MAKEFLAGS would carry its own variable
// overrides), with DIST_STANDIN set to the stand-in platforms.
func makeTargets(dist, version string, targets ...string) ([]byte, error) {
	args := append([]string{"--no-print-directory", "VERSION=" + version, "DIST=" + dist, "DIST_STANDIN=" + strings.Join(standin, " ")}, targets...)
	cmd := command(rel.root, nil, "make", args...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	return cmd.CombinedOutput()
}

// command prepares name in dir with the test's environment plus env.
func command(dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// krewEnv isolates krew and kubectl: their own KREW_ROOT and a kubeconfig that does not exist, so
// nothing reads the user's plugins or talks to a cluster, and no upgrade check goes online.
func krewEnv(krewRoot string, p platform) []string {
	return []string{
		"KREW_ROOT=" + krewRoot,
		"KREW_OS=" + p.os,
		"KREW_ARCH=" + p.arch,
		"KREW_NO_UPGRADE_CHECK=1",
		"KUBECONFIG=" + filepath.Join(krewRoot, "no-kubeconfig"),
		"PATH=" + filepath.Join(krewRoot, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
}

// krew runs the krew binary (not through kubectl: the test checks the plugin, not krew's own
// installation) and returns its combined output.
func krew(t *testing.T, krewRoot string, p platform, args ...string) ([]byte, error) {
	t.Helper()
	return command(krewRoot, krewEnv(krewRoot, p), filepath.Join(rel.tools, "krew"), args...).CombinedOutput()
}

// plugin holds the manifest fields the test checks beyond krew's validation (which already parses
// the whole manifest with krew's own types).
type plugin struct {
	Metadata struct{ Name string }
	Spec     struct {
		Version, Homepage, ShortDescription, Description, Caveats string
		Platforms                                                 []struct {
			Selector struct{ MatchLabels map[string]string }
			URI      string
			Sha256   string
		}
	}
}

func readManifest(t *testing.T, path string) plugin {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p plugin
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return p
}

func checksums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(rel.dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q is not \"<sha256>  <file>\"", s.Text())
		}
		sums[name] = sum
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type entry struct {
	Name    string
	Mode    int64
	ModTime time.Time
}

func listArchive(t *testing.T, path string) []entry {
	t.Helper()
	var got []entry
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			got = append(got, entry{Name: f.Name, Mode: int64(f.Mode().Perm()), ModTime: f.Modified.UTC()})
		}
		return got
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{Name: h.Name, Mode: h.Mode, ModTime: h.ModTime.UTC()})
	}
}

func TestDistHasOneArchivePerPlatformWithBinaryLicenseAndCompletion(t *testing.T) {
	sums := checksums(t)
	var wantNames []string
	for _, p := range platforms {
		wantNames = append(wantNames, p.archive())
		t.Run(p.String(), func(t *testing.T) {
			path := filepath.Join(rel.dist, p.archive())
			if got := sha256File(t, path); got != sums[p.archive()] {
				t.Errorf("sha256 of %s = %s; checksums.txt says %q", p.archive(), got, sums[p.archive()])
			}
			want := []entry{
				{Name: "LICENSE", Mode: 0o644, ModTime: rel.mtime},
				{Name: p.bin(), Mode: 0o755, ModTime: rel.mtime},
				{Name: "kubectl_complete-hpa", Mode: 0o755, ModTime: rel.mtime},
			}
			if diff := cmp.Diff(want, listArchive(t, path)); diff != "" {
				t.Errorf("entries of %s (-want +got):\n%s", p.archive(), diff)
			}
		})
	}
	var gotNames []string
	for name := range sums {
		gotNames = append(gotNames, name)
	}
	slices.Sort(gotNames)
	slices.Sort(wantNames)
	if diff := cmp.Diff(wantNames, gotNames); diff != "" {
		t.Errorf("files in checksums.txt (-want +got):\n%s", diff)
	}
}

func TestManifestPassesKrewValidationAndNamesTheLocalArchives(t *testing.T) {
	out, err := command(rel.dist, nil, filepath.Join(rel.tools, "validate-krew-manifest"), "-manifest", rel.manifest, "-skip-install").CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest rejected %s: %v\n%s", rel.manifest, err, out)
	}

	p := readManifest(t, rel.manifest)
	if p.Metadata.Name != "hpa" || p.Spec.Version != version {
		t.Errorf("manifest names plugin %q version %q; want hpa %s", p.Metadata.Name, p.Spec.Version, version)
	}
	if n := len(p.Spec.ShortDescription); n > 50 {
		t.Errorf("shortDescription has %d characters; krew-index allows 50", n)
	}
	if p.Spec.Homepage == "" || p.Spec.Description == "" {
		t.Errorf("manifest lacks a homepage (%q) or a description (%q)", p.Spec.Homepage, p.Spec.Description)
	}
	for _, need := range []string{"horizontalpodautoscalers", "pods", "deployments/scale", "events", "leases", "services/proxy", "metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io", "kubectl hpa rbac"} {
		if !strings.Contains(p.Spec.Caveats, need) {
			t.Errorf("caveats do not name %q", need)
		}
	}

	sums := checksums(t)
	got := map[string]string{}
	for _, pl := range p.Spec.Platforms {
		got[pl.Selector.MatchLabels["os"]+"/"+pl.Selector.MatchLabels["arch"]] = pl.URI + " " + pl.Sha256
	}
	want := map[string]string{}
	for _, pl := range platforms {
		want[pl.String()] = "https://github.com/kubectl-hpa/kubectl-hpa/releases/download/" + version + "/" + pl.archive() + " " + sums[pl.archive()]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platforms' uri and sha256 (-want +got):\n%s", diff)
	}
}

// installed checks what krew put under krewRoot for p: the LICENSE and the completion script in the
// plugin's install directory and the plugin's command on krew's PATH.
func installed(t *testing.T, krewRoot string, p platform) { installedVersion(t, krewRoot, p, version) }

func installedVersion(t *testing.T, krewRoot string, p platform, v string) {
	t.Helper()
	dir := filepath.Join(krewRoot, "store", "hpa", v)
	for _, name := range []string{"LICENSE", "kubectl_complete-hpa", p.bin()} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not installed: %v", name, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "kubectl_complete-hpa")); err == nil && st.Mode().Perm()&0o111 == 0 {
		t.Errorf("kubectl_complete-hpa installed with mode %v; want executable", st.Mode())
	}
	if _, err := os.Stat(filepath.Join(krewRoot, "bin", p.bin())); err != nil {
		t.Errorf("plugin command not linked into krew's bin: %v", err)
	}
}

func TestKrewInstallsEveryPlatformFromTheLocalArchive(t *testing.T) {
	host := platform{runtime.GOOS, runtime.GOARCH}
	for _, p := range platforms {
		t.Run(p.String(), func(t *testing.T) {
			krewRoot := t.TempDir()
			out, err := krew(t, krewRoot, p, "install", "--manifest="+rel.manifest, "--archive="+filepath.Join(rel.dist, p.archive()))
			if err != nil {
				t.Fatalf("krew install: %v\n%s", err, out)
			}
			installed(t, krewRoot, p)
			if p == host {
				// kubectl finds the host's binary through krew's bin directory on PATH.
				kubectl(t, krewRoot, p, []string{"hpa", "version"}, versionLine(version))
			}
		})
	}
}

// versionLine is how `kubectl hpa version` starts for v, built from this commit: the commit is
// named once, in the version or after it.
func versionLine(v string) string {
	if strings.Contains(v, rel.commit) {
		return "kubectl-hpa " + v + " (go"
	}
	return "kubectl-hpa " + v + " (commit " + rel.commit + ", go"
}

// kubectl runs the kubectl found on the test's PATH in p's krew environment and requires want in
// its output.
func kubectl(t *testing.T, krewRoot string, p platform, args []string, want string) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed on PATH to run the installed plugin: %v", err)
	}
	out, err := command(krewRoot, krewEnv(krewRoot, p), path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("kubectl %s printed:\n%s\nwant it to contain %q", strings.Join(args, " "), out, want)
	}
}

// mutate writes a copy of the release manifest changed by edit; the file keeps the name hpa.yaml
// that krew's validator requires.
func mutate(t *testing.T, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(rel.manifest)
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(string(b))
	if changed == string(b) {
		t.Fatal("the edit did not change the manifest")
	}
	path := filepath.Join(t.TempDir(), "hpa.yaml")
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// platformBlock is the manifest text of p's entry in spec.platforms.
func platformBlock(t *testing.T, manifest string, p platform) string {
	t.Helper()
	start := strings.Index(manifest, "  - selector:\n      matchLabels:\n        os: "+p.os+"\n        arch: "+p.arch+"\n")
	if start < 0 {
		t.Fatalf("manifest has no platform %s", p)
	}
	end := strings.Index(manifest[start+1:], "  - selector:")
	if end < 0 {
		return manifest[start:]
	}
	return manifest[start : start+1+end]
}

func TestBadReleasesFailWithKrewsMessage(t *testing.T) {
	linux := platform{"linux", "amd64"}
	darwinARM := platform{"darwin", "arm64"}
	sums := checksums(t)
	for _, tc := range []struct {
		name string
		// check runs krew against a broken release and returns its output and error.
		check func(t *testing.T) ([]byte, error)
		want  string
	}{
		{
			name: "wrong sha256",
			check: func(t *testing.T) ([]byte, error) {
				wrong := strings.Repeat("ab", 32)
				m := mutate(t, func(s string) string { return strings.Replace(s, sums[linux.archive()], wrong, 1) })
				return krew(t, t.TempDir(), linux, "install", "--manifest="+m, "--archive="+filepath.Join(rel.dist, linux.archive()))
			},
			want: "checksum does not match, want: " + strings.Repeat("ab", 32) + ", got " + sums[linux.archive()],
		},
		{
			name: "missing platform",
			check: func(t *testing.T) ([]byte, error) {
				m := mutate(t, func(s string) string { return strings.Replace(s, platformBlock(t, s, darwinARM), "", 1) })
				return krew(t, t.TempDir(), darwinARM, "install", "--manifest="+m, "--archive="+filepath.Join(rel.dist, darwinARM.archive()))
			},
			want: `plugin "hpa" does not offer installation for this platform`,
		},
		{
			name: "version without leading v, in the manifest",
			check: func(t *testing.T) ([]byte, error) {
				m := mutate(t, func(s string) string {
					return strings.Replace(s, "version: "+version+"\n", "version: "+strings.TrimPrefix(version, "v")+"\n", 1)
				})
				return command(rel.dist, nil, filepath.Join(rel.tools, "validate-krew-manifest"), "-manifest", m, "-skip-install").CombinedOutput()
			},
			want: `version string "` + strings.TrimPrefix(version, "v") + `" not starting with 'v'`,
		},
		{
			name: "version without leading v, given to make krew-manifest",
			check: func(t *testing.T) ([]byte, error) {
				// The release's archives under the names make dist gives them for that version;
				// -o dist keeps make from rebuilding them.
				bare := strings.TrimPrefix(version, "v")
				dist := t.TempDir()
				for _, p := range platforms {
					if err := os.Link(filepath.Join(rel.dist, p.archive()), filepath.Join(dist, strings.Replace(p.archive(), version, bare, 1))); err != nil {
						t.Fatal(err)
					}
				}
				return makeTargets(dist, bare, "-o", "dist", "krew-manifest")
			},
			want: `version string "` + strings.TrimPrefix(version, "v") + `" not starting with 'v'`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.check(t)
			if err == nil {
				t.Fatalf("krew accepted the bad release:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("krew failed without the expected message %q:\n%s", tc.want, out)
			}
		})
	}
}

// readmeBlock returns the sh code block of README.md that contains marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	return docBlock(t, "README.md", marker)
}

// docBlock returns the sh code block of the repository's file doc that contains marker.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rel.root, doc))
	if err != nil {
		t.Fatal(err)
	}
	// A block in a list item is indented; its lines are run as written, without the indent.
	parts := strings.Split(string(b), "```")
	for i := 1; i < len(parts); i += 2 {
		if code, ok := strings.CutPrefix(parts[i], "sh\n"); ok && strings.Contains(code, marker) {
			var lines []string
			for _, l := range strings.Split(code, "\n") {
				lines = append(lines, strings.TrimSpace(l))
			}
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("%s has no sh block containing %q", doc, marker)
	return ""
}

// sh runs script with krew reachable as `kubectl krew` (kubectl runs kubectl-krew from PATH) in
// krewRoot's environment, and returns its combined output.
func sh(t *testing.T, krewRoot string, p platform, script string) string {
	t.Helper()
	pluginDir := t.TempDir()
	if err := os.Symlink(filepath.Join(rel.tools, "krew"), filepath.Join(pluginDir, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	env := append(krewEnv(krewRoot, p), "PATH="+filepath.Join(krewRoot, "bin")+string(os.PathListSeparator)+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := command(krewRoot, env, "sh", "-eu", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("README commands failed: %v\n%s\n%s", err, script, out)
	}
	return string(out)
}

// shOwnKrew runs script in krewRoot's environment as a user who has only what the script
// installs: `kubectl krew` is found only in $KREW_ROOT/bin, and make runs isolated from any make
// that runs this test (as makeTargets does). It returns the combined output and the error.
func shOwnKrew(krewRoot string, p platform, script string) (string, error) {
	cmd := command(krewRoot, krewEnv(krewRoot, p), "sh", "-eu", "-c", script)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// uninstalled requires that nothing of the plugin is left under krewRoot: its bin directory holds
// only keep (krew's own link, when krew was installed there), and the plugin has no store
// directory and no receipt.
func uninstalled(t *testing.T, krewRoot string, keep ...string) {
	t.Helper()
	left, err := os.ReadDir(filepath.Join(krewRoot, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range left {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(keep, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("$KREW_ROOT/bin after the uninstall (-want +got):\n%s", diff)
	}
	for _, path := range []string{filepath.Join("store", "hpa"), filepath.Join("receipts", "hpa.yaml")} {
		if _, err := os.Lstat(filepath.Join(krewRoot, path)); !os.IsNotExist(err) {
			t.Errorf("$KREW_ROOT/%s still there after the uninstall (stat: %v)", path, err)
		}
	}
}

// indexRepo makes a git repository of krew/index as committed plus manifest as plugins/hpa.yaml,
// the layout krew clones.
func indexRepo(t *testing.T, manifest []byte) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "krew-index")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join(rel.root, "krew", "index"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "plugins", "hpa.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=roundtrip", "-c", "user.email=roundtrip@example.invalid", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "index"},
	} {
		if out, err := command(repo, nil, "git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return repo
}

// commitIndex replaces plugins/hpa.yaml in the index repository with manifest, as publishing
// a release does.
func commitIndex(t *testing.T, repo string, manifest []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, "plugins", "hpa.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", "."},
		{"-c", "user.name=roundtrip", "-c", "user.email=roundtrip@example.invalid", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "publish"},
	} {
		if out, err := command(repo, nil, "git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestReadmeInstructionsWork runs the install, completion, upgrade and uninstall commands of
// README.md and docs/install.md through kubectl and krew, with the project's index cloned from a
// local repository and the releases served from 127.0.0.1 instead of GitHub: the older version
// is installed from the index, the current one published there, and `kubectl krew upgrade`
// brings it. Each install is followed by the uninstall the README gives for it, after which
// nothing of the plugin is left; the install from source starts from a fresh KREW_ROOT with no
// krew, as in a fresh clone offline: `make krew` first.
func TestReadmeInstructionsWork(t *testing.T) {
	const releases = "https://github.com/kubectl-hpa/kubectl-hpa/releases/download/"
	const latest = "https://github.com/kubectl-hpa/kubectl-hpa/releases/latest/download/"
	release, err := os.ReadFile(rel.manifest)
	if err != nil {
		t.Fatal(err)
	}
	host := platform{runtime.GOOS, runtime.GOARCH}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	baseURL := "http://" + ln.Addr().String()
	served := []byte(strings.ReplaceAll(string(release), releases, baseURL+"/"))
	if bytes.Equal(served, release) {
		t.Fatalf("manifest names no archive under %s", releases)
	}
	// The older release's manifest: the same template for oldVersion, with the sum of its one
	// archive (the other platforms' entries are never fetched here).
	oldSum := sha256File(t, filepath.Join(rel.oldDist, host.archiveOf(oldVersion)))
	old := strings.ReplaceAll(string(served), version, oldVersion)
	old = strings.Replace(old, checksums(t)[host.archive()], oldSum, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch dir, file := path.Split(r.URL.Path); {
		case dir == "/latest/download/" && file == "hpa.yaml":
			_, _ = w.Write(served)
		case dir == "/"+version+"/":
			http.ServeFile(w, r, filepath.Join(rel.dist, file))
		case dir == "/"+oldVersion+"/":
			http.ServeFile(w, r, filepath.Join(rel.oldDist, file))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	t.Run("own index, completion, upgrade, uninstall", func(t *testing.T) {
		krewRoot := t.TempDir()
		index := indexRepo(t, []byte(old))
		install := strings.ReplaceAll(readmeBlock(t, "krew index add"), "https://github.com/kubectl-hpa/krew-index.git", index)
		if out := sh(t, krewRoot, host, install); !strings.Contains(out, versionLine(oldVersion)) {
			t.Errorf("install commands printed:\n%s\nwant %q from kubectl hpa version", out, versionLine(oldVersion))
		}
		installedVersion(t, krewRoot, host, oldVersion)

		sh(t, krewRoot, host, docBlock(t, "docs/install.md", "kubectl_complete-hpa\" \"$krew_root/bin/"))
		kubectl(t, krewRoot, host, []string{"__complete", "hpa", "vers"}, "version")

		commitIndex(t, index, served)
		if out := sh(t, krewRoot, host, docBlock(t, "docs/install.md", "krew upgrade")); !strings.Contains(out, versionLine(version)) {
			t.Errorf("upgrade commands printed:\n%s\nwant %q from kubectl hpa version", out, versionLine(version))
		}
		installed(t, krewRoot, host)
		if _, err := os.Stat(filepath.Join(krewRoot, "store", "hpa", oldVersion)); !os.IsNotExist(err) {
			t.Errorf("the old version is still installed after the upgrade (stat: %v)", err)
		}
		// The helper copied once keeps completing after the upgrade.
		kubectl(t, krewRoot, host, []string{"__complete", "hpa", "vers"}, "version")

		sh(t, krewRoot, host, readmeBlock(t, "krew uninstall"))
		sh(t, krewRoot, host, readmeBlock(t, "krew index remove"))
		uninstalled(t, krewRoot)
		if _, err := os.Stat(filepath.Join(krewRoot, "index", "kubectl-hpa")); !os.IsNotExist(err) {
			t.Errorf("index kubectl-hpa still present after uninstall (stat: %v)", err)
		}
	})

	t.Run("manifest url", func(t *testing.T) {
		krewRoot := t.TempDir()
		// Without any index, krew install clones the default index from GitHub first; users have
		// it, the test stays offline with a local one.
		if out, err := krew(t, krewRoot, host, "index", "add", "kubectl-hpa", indexRepo(t, served)); err != nil {
			t.Fatalf("krew index add: %v\n%s", err, out)
		}
		block := docBlock(t, "docs/install.md", "--manifest-url")
		if !strings.Contains(block, latest) {
			t.Fatalf("README's --manifest-url block does not name %s:\n%s", latest, block)
		}
		sh(t, krewRoot, host, strings.ReplaceAll(block, latest, baseURL+"/latest/download/"))
		installed(t, krewRoot, host)

		sh(t, krewRoot, host, readmeBlock(t, "krew uninstall"))
		uninstalled(t, krewRoot)
	})

	// A fresh clone offline, with no krew: the README's make krew, the install from source through
	// that krew (an older checkout's build), the upgrade docs/install.md gives for a from-source
	// install (with the uninstall for a krew without an index, as it says), and that uninstall.
	t.Run("local build before a release, with make krew's krew, then upgraded from source", func(t *testing.T) {
		krewRoot := t.TempDir()
		// The block's make line is run here, for the version each step needs; the rest runs as
		// written from a checkout whose dist/ it filled.
		block := readmeBlock(t, "--archive=")
		makeLine, install, ok := strings.Cut(block, "\n")
		if makeLine != "make krew-local" || !ok {
			t.Fatalf("README's local build block does not start with make krew-local:\n%s", block)
		}
		checkout := t.TempDir()
		dist := filepath.Join(checkout, "dist")
		if out, err := makeTargets(dist, oldVersion, "BIN="+rel.oldBin, "krew-local"); err != nil {
			t.Fatalf("make krew-local for %s: %v\n%s", oldVersion, err, out)
		}
		archives, err := filepath.Glob(filepath.Join(dist, "kubectl-hpa_*"))
		if err != nil || len(archives) != 1 {
			t.Fatalf("make krew-local packed %v (%v), want this machine's archive alone", archives, err)
		}
		script := "cd " + rel.root + "\n" + readmeBlock(t, "make krew") + "cd " + checkout + "\n" + install
		out, err := shOwnKrew(krewRoot, host, script)
		if err != nil {
			t.Fatalf("README commands failed: %v\n%s\n%s", err, script, out)
		}
		if !strings.Contains(out, versionLine(oldVersion)) {
			t.Errorf("make krew and the local install printed:\n%s\nwant %q", out, versionLine(oldVersion))
		}
		installedVersion(t, krewRoot, host, oldVersion)
		if target, err := os.Readlink(filepath.Join(krewRoot, "bin", "kubectl-krew")); err != nil || !strings.HasPrefix(target, filepath.Join(krewRoot, "store", "krew")+string(filepath.Separator)) {
			t.Errorf("make krew did not install krew as krew installs itself (bin/kubectl-krew -> %q, %v)", target, err)
		}

		// The upgrade: make krew-local in the newer checkout, then docs/install.md's block with
		// the rm -rf block of the README's Uninstall in place of kubectl krew uninstall, as it
		// says for a krew without an index.
		upgrade := docBlock(t, "docs/install.md", "make krew-local")
		makeLine, rest, ok := strings.Cut(upgrade, "\n")
		if makeLine != "make krew-local" || !ok || !strings.Contains(rest, "kubectl krew uninstall hpa\n") {
			t.Fatalf("docs/install.md's upgrade from source does not run make krew-local, then kubectl krew uninstall hpa:\n%s", upgrade)
		}
		if out, err := makeTargets(dist, version, "krew-local"); err != nil {
			t.Fatalf("make krew-local for %s: %v\n%s", version, err, out)
		}
		rest = strings.Replace(rest, "kubectl krew uninstall hpa\n", readmeBlock(t, "receipts/hpa.yaml"), 1)
		out, err = shOwnKrew(krewRoot, host, "cd "+checkout+"\n"+rest)
		if err != nil {
			t.Fatalf("docs/install.md's upgrade failed: %v\n%s\n%s", err, rest, out)
		}
		if !strings.Contains(out, versionLine(version)) {
			t.Errorf("the upgrade from source printed:\n%s\nwant %q", out, versionLine(version))
		}
		installed(t, krewRoot, host)
		if _, err := os.Stat(filepath.Join(krewRoot, "store", "hpa", oldVersion)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the old version is still in krew's store after the upgrade: %v", err)
		}

		// krew without an index refuses to uninstall, as the README says; its other block works.
		const refusal = "krew local plugin index is not initialized"
		if out, err := shOwnKrew(krewRoot, host, readmeBlock(t, "krew uninstall")); err == nil || !strings.Contains(out, refusal) {
			t.Errorf("kubectl krew uninstall without an index: %v\n%s\nwant it refused with %q, as the README says", err, out, refusal)
		}
		if out, err := shOwnKrew(krewRoot, host, readmeBlock(t, "receipts/hpa.yaml")); err != nil {
			t.Fatalf("README commands failed: %v\n%s", err, out)
		}
		uninstalled(t, krewRoot, "kubectl-krew")
	})
}
