// Package ociimage builds the kubectl-hpa container image as an OCI image index (one image per
// platform: the static binary on an empty base, run as a non-root numeric user, no shell) and
// reads it back the way a container runtime does. The bytes depend only on the inputs: layer
// entries carry fixed owners and the commit time, and the config's creation time is the commit
// time, so the same commit and toolchain give the same digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const (
	// BinaryPath is where the plugin lives in the image; it is the entrypoint.
	BinaryPath = "/usr/local/bin/kubectl-hpa"
	// User is the numeric non-root user and group (distroless' "nonroot"): numeric so that
	// runAsNonRoot can verify it without a passwd file.
	User = "65532:65532"
	// refNameAnnotation names the index in the layout's index.json (skopeo's oci:DIR:REF).
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// Spec is what an image is built from.
type Spec struct {
	Version  string    // release version, the image tag
	Revision string    // full commit hash
	Source   string    // repository URL
	Created  time.Time // commit time: the config's creation time and every entry's mtime
	License  string    // path of LICENSE, copied to /LICENSE
	// Binaries maps "linux/amd64" and the like to the static binary built for it.
	Binaries map[string]string
}

// Labels are the OCI annotations of the image config.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "kubectl-hpa",
		"org.opencontainers.image.source":   s.Source,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  s.Created.UTC().Format(time.RFC3339),
	}
}

// Build returns the index of one image per platform of spec, in platform order. Validate it as
// written (Read): the in-memory form carries empty maps that serialize away.
func Build(spec Spec) (v1.ImageIndex, error) {
	if len(spec.Binaries) == 0 {
		return nil, errors.New("no binaries to put in the image")
	}
	license, err := os.ReadFile(spec.License)
	if err != nil {
		return nil, fmt.Errorf("reading the license: %w", err)
	}
	platforms := make([]string, 0, len(spec.Binaries))
	for p := range spec.Binaries {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(p, "/")
		if !ok || osName != "linux" {
			return nil, fmt.Errorf("platform %q: want linux/<arch>", p)
		}
		bin, err := os.ReadFile(spec.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("reading the %s binary: %w", p, err)
		}
		img, err := image(spec, arch, bin, license)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: osName, Architecture: arch},
		}})
	}
	return idx, nil
}

func image(spec Spec, arch string, bin, license []byte) (v1.Image, error) {
	layerTar, err := rootfs(spec.Created, bin, license)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: spec.Created}, CreatedBy: "make image", Comment: "kubectl-hpa " + spec.Version,
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: spec.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=" + path.Dir(BinaryPath)},
		Labels:     spec.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the layer: the directories down to the binary, the binary and /LICENSE, owned by
// root (the non-root user must not be able to replace them), in name order.
func rootfs(mtime time.Time, bin, license []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(name string, typ byte, mode int64, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime.UTC(),
			Uid: 0, Gid: 0, Format: tar.FormatPAX}
	}
	var dirs []string
	for d := path.Dir(BinaryPath); d != "/"; d = path.Dir(d) {
		dirs = append(dirs, strings.TrimPrefix(d, "/")+"/")
	}
	slices.Reverse(dirs)
	entries := []struct {
		h    *tar.Header
		body []byte
	}{{hdr("LICENSE", tar.TypeReg, 0o644, int64(len(license))), license}}
	for _, d := range dirs {
		entries = append(entries, struct {
			h    *tar.Header
			body []byte
		}{hdr(d, tar.TypeDir, 0o755, 0), nil})
	}
	entries = append(entries, struct {
		h    *tar.Header
		body []byte
	}{hdr(strings.TrimPrefix(BinaryPath, "/"), tar.TypeReg, 0o755, int64(len(bin))), bin})
	for _, e := range entries {
		if err := tw.WriteHeader(e.h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes idx as an OCI image layout in dir (replacing it), named by ref in
// index.json, and returns the index's digest.
func WriteLayout(dir, ref string, idx v1.ImageIndex) (v1.Hash, error) {
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: ref})); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// WriteArchive writes the layout in dir as an oci-archive tarball (the layout's files in name
// order, owned by root, stamped with mtime), as skopeo's oci-archive: and podman load read it.
func WriteArchive(tarPath, dir string, mtime time.Time) error {
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			files = append(files, p)
		}
		return nil
	}); err != nil {
		return err
	}
	slices.Sort(files)
	tmp := tarPath + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: mtime.UTC(), Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: st.Size()}
		if st.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if !st.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return errors.Join(err, f.Close())
			}
			if _, err := tw.Write(b); err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, tarPath)
}

// Read returns the index that the layout in dir names ref, validated with the library's own
// validation (every blob's digest and size, the configs, the layers' diff IDs, the platforms).
func Read(dir, ref string) (v1.ImageIndex, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Annotations[refNameAnnotation] != ref {
			continue
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		if err := validate.Index(idx); err != nil {
			return nil, fmt.Errorf("image %s in %s does not validate: %w", ref, dir, err)
		}
		return idx, nil
	}
	return nil, fmt.Errorf("the OCI layout %s has no image named %q", dir, ref)
}

// Unpack extracts the filesystem of idx's image for platform ("linux/amd64") into rootDir, as a
// runtime would (layers flattened, whiteouts applied), and returns the image's config.
func Unpack(idx v1.ImageIndex, platform, rootDir string) (*v1.ConfigFile, error) {
	want, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || !d.Platform.Equals(*want) {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if err := extract(mutate.Extract(img), rootDir); err != nil {
			return nil, fmt.Errorf("extracting the %s image: %w", platform, err)
		}
		return cf, nil
	}
	return nil, fmt.Errorf("the image has no %s variant", platform)
}

func extract(rc io.ReadCloser, rootDir string) error {
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(rootDir, filepath.FromSlash(path.Clean("/"+h.Name)))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, fs.FileMode(h.Mode)&fs.ModePerm); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&fs.ModePerm)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if err := errors.Join(err, f.Close()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s has type %q, which this image never holds", h.Name, h.Typeflag)
		}
	}
}
