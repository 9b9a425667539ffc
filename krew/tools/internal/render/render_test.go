package render

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// platforms are the release's archives, named as hack/dist.sh names them.
var platforms = []string{"linux_amd64.tar.gz", "linux_arm64.tar.gz", "darwin_amd64.tar.gz", "darwin_arm64.tar.gz", "windows_amd64.zip", "windows_arm64.zip"}

// fakeDist writes one small archive stand-in per platform; their contents differ so every sha256
// in the output is distinct.
func fakeDist(t *testing.T, tag string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range platforms {
		if err := os.WriteFile(filepath.Join(dir, "kubectl-hpa_"+tag+"_"+p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestManifestRendersTheProjectTemplate(t *testing.T) {
	tmpl, err := os.ReadFile("../../../hpa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Manifest(tmpl, "v1.2.3", fakeDist(t, "v1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "hpa-v1.2.3.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("rendered manifest differs from %s (-want +got; run go test -update to accept):\n%s", golden, diff)
	}
}

func TestManifest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tmpl    string
		tag     string
		want    string
		wantErr string
	}{
		{
			name: "url and sha256 in krew-release-bot form",
			tmpl: `    {{addURIAndSha "https://example.com/{{ .TagName }}/kubectl-hpa_{{ .TagName }}_linux_amd64.tar.gz" .TagName }}`,
			tag:  "v0.1.0",
			// sha256 of the bytes "linux_amd64.tar.gz".
			want: "    uri: https://example.com/v0.1.0/kubectl-hpa_v0.1.0_linux_amd64.tar.gz\n    sha256: 51f01d1aa2d1afb4f8953ba6673759001f1e68a102a39c24078905bf6786723b",
		},
		{
			name:    "archive of another version is missing",
			tmpl:    `{{addURIAndSha "https://example.com/kubectl-hpa_{{ .TagName }}_linux_amd64.tar.gz" .TagName }}`,
			tag:     "v9.9.9",
			wantErr: "build it with make dist and the same VERSION",
		},
		{
			name:    "unknown template value",
			tmpl:    `version: {{ .Version }}`,
			tag:     "v0.1.0",
			wantErr: "can't evaluate field Version",
		},
		{
			name:    "malformed template",
			tmpl:    `version: {{ .TagName `,
			tag:     "v0.1.0",
			wantErr: "parsing manifest template",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Manifest([]byte(tc.tmpl), tc.tag, fakeDist(t, "v0.1.0"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Manifest() error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("Manifest() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOnlyPlatformsKeepsTheNamedPlatformsOfTheProjectTemplate: make krew-local builds this
// machine's archive alone, and its manifest lists that platform alone (krew then needs no
// other archive to check), every other part of the template as it is.
func TestOnlyPlatformsKeepsTheNamedPlatformsOfTheProjectTemplate(t *testing.T) {
	tmpl, err := os.ReadFile("../../../hpa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	only, err := OnlyPlatforms(tmpl, []string{"linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	if err := os.WriteFile(filepath.Join(dist, "kubectl-hpa_v1.2.3_linux_amd64.tar.gz"), []byte("linux_amd64.tar.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Manifest(only, "v1.2.3", dist)
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(filepath.Join("testdata", "hpa-v1.2.3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The golden manifest with every platform but linux/amd64 cut out.
	start := strings.Index(string(full), "  - selector:\n      matchLabels:\n        os: linux\n        arch: arm64")
	if start < 0 {
		t.Fatal("the golden manifest has no linux/arm64 platform after linux/amd64")
	}
	if want := string(full[:start]); string(got) != want {
		t.Errorf("manifest for linux/amd64 (-want +got):\n%s", cmp.Diff(want, string(got)))
	}
	for _, bad := range [][]string{{"plan9/amd64"}, {}} {
		if _, err := OnlyPlatforms(tmpl, bad); err == nil {
			t.Errorf("OnlyPlatforms(%q) gave no error", bad)
		}
	}
}
