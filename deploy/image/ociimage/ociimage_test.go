package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func testSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return Spec{
		Version: "v1.2.3", Revision: strings.Repeat("ab", 20), Source: "https://example.invalid/kubectl-hpa",
		Created: time.Unix(1700000000, 0).UTC(), License: write("LICENSE", "license text\n"),
		Binaries: map[string]string{"linux/amd64": write("amd64", "amd64 binary"), "linux/arm64": write("arm64", "arm64 binary")},
	}
}

// buildToDisk builds spec into a fresh directory and returns the layout, the archive's sha256
// and the digest.
func buildToDisk(t *testing.T, spec Spec) (string, [32]byte, string) {
	t.Helper()
	idx, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	digest, err := WriteLayout(filepath.Join(dir, "layout"), spec.Version, idx)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.tar")
	if err := WriteArchive(archive, filepath.Join(dir, "layout"), spec.Created); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "layout"), sha256.Sum256(b), digest.String()
}

func TestBuildIsReproducible(t *testing.T) {
	spec := testSpec(t)
	_, sum1, d1 := buildToDisk(t, spec)
	_, sum2, d2 := buildToDisk(t, spec)
	if d1 != d2 {
		t.Errorf("two builds of the same inputs have digests %s and %s", d1, d2)
	}
	if sum1 != sum2 {
		t.Errorf("two builds of the same inputs wrote different archives")
	}
	spec.Revision = strings.Repeat("cd", 20)
	if _, _, d3 := buildToDisk(t, spec); d3 == d1 {
		t.Errorf("a different revision gave the same digest %s", d3)
	}
}

func TestImageIsNonRootStaticBinaryOnEmptyBaseWithLabels(t *testing.T) {
	spec := testSpec(t)
	dir, _, digest := buildToDisk(t, spec)
	idx, err := Read(dir, spec.Version)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Digest(); got.String() != digest {
		t.Errorf("layout's index digest %s; built %s", got, digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("index platforms (-want +got):\n%s", diff)
	}
	for _, platform := range platforms {
		t.Run(platform, func(t *testing.T) {
			root := t.TempDir()
			cf, err := Unpack(idx, platform, root)
			if err != nil {
				t.Fatal(err)
			}
			uid, _, _ := strings.Cut(cf.Config.User, ":")
			if n, err := strconv.Atoi(uid); err != nil || n == 0 {
				t.Errorf("config user %q; want a numeric non-root uid", cf.Config.User)
			}
			if diff := cmp.Diff([]string{BinaryPath}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(spec.Labels(), cf.Config.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			for _, k := range []string{"source", "revision", "version", "licenses"} {
				if cf.Config.Labels["org.opencontainers.image."+k] == "" {
					t.Errorf("label org.opencontainers.image.%s is empty", k)
				}
			}
			if cf.Architecture != strings.TrimPrefix(platform, "linux/") || cf.OS != "linux" {
				t.Errorf("config platform %s/%s; want %s", cf.OS, cf.Architecture, platform)
			}
			got, err := os.ReadFile(filepath.Join(root, BinaryPath))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(spec.Binaries[platform])
			if !bytes.Equal(got, want) {
				t.Errorf("unpacked binary differs from %s", spec.Binaries[platform])
			}
			// Empty base: the layer holds only the binary, its directories and the license (no
			// shell, no package manager).
			img, err := imageFor(t, idx, platform)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			tr := tar.NewReader(mutate.Extract(img))
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, h.Name)
				if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(spec.Created) {
					t.Errorf("entry %s owned by %d:%d at %v; want 0:0 at the commit time", h.Name, h.Uid, h.Gid, h.ModTime)
				}
			}
			slices.Sort(names)
			if diff := cmp.Diff([]string{"LICENSE", "usr", "usr/local", "usr/local/bin", "usr/local/bin/kubectl-hpa"}, names); diff != "" {
				t.Errorf("image files (-want +got):\n%s", diff)
			}
		})
	}
}

func imageFor(t *testing.T, idx v1.ImageIndex, platform string) (v1.Image, error) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform.String() == platform {
			return idx.Image(d.Digest)
		}
	}
	t.Fatalf("no %s image", platform)
	return nil, nil
}
