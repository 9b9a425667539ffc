package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type entry struct {
	Name    string
	Mode    int64
	ModTime time.Time
	Body    string
}

var stamp = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// writeSources creates the files under dir with the given permissions and a modification time, and
// returns them in the given order.
func writeSources(t *testing.T, dir string, mtime time.Time, perms map[string]os.FileMode, order []string) []File {
	t.Helper()
	bodies := map[string]string{"kubectl-hpa": "binary", "LICENSE": "licence text", "kubectl_complete-hpa": "#!/bin/sh\n"}
	var files []File
	for _, name := range order {
		src := filepath.Join(dir, name)
		if err := os.WriteFile(src, []byte(bodies[name]), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(src, perms[name]); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(src, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Name: name, Src: src})
	}
	return files
}

func readBack(t *testing.T, format Format, b []byte) []entry {
	t.Helper()
	var got []entry
	switch format {
	case TarGz:
		gz, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if gz.Name != "" || !gz.ModTime.IsZero() {
			t.Errorf("gzip header carries name %q and time %v; want neither", gz.Name, gz.ModTime)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
				t.Errorf("%s owned by %d:%d (%q:%q); want 0:0 without names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, entry{Name: h.Name, Mode: h.Mode, ModTime: h.ModTime.UTC(), Body: string(body)})
		}
	case Zip:
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			_ = rc.Close()
			got = append(got, entry{Name: f.Name, Mode: int64(f.Mode().Perm()), ModTime: f.Modified.UTC(), Body: string(body)})
		}
	}
	return got
}

func TestWriteIsReproducibleAndNormalisesMetadata(t *testing.T) {
	want := []entry{
		{Name: "LICENSE", Mode: 0o644, ModTime: stamp, Body: "licence text"},
		{Name: "kubectl-hpa", Mode: 0o755, ModTime: stamp, Body: "binary"},
		{Name: "kubectl_complete-hpa", Mode: 0o755, ModTime: stamp, Body: "#!/bin/sh\n"},
	}
	for _, tc := range []struct {
		name   string
		format Format
	}{
		{name: "tar.gz", format: TarGz},
		{name: "zip", format: Zip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two checkouts differing in file times, umask-dependent permissions and listing order.
			a := writeSources(t, t.TempDir(), time.Now(),
				map[string]os.FileMode{"kubectl-hpa": 0o700, "LICENSE": 0o600, "kubectl_complete-hpa": 0o755},
				[]string{"kubectl-hpa", "LICENSE", "kubectl_complete-hpa"})
			b := writeSources(t, t.TempDir(), time.Unix(1, 0),
				map[string]os.FileMode{"kubectl-hpa": 0o775, "LICENSE": 0o664, "kubectl_complete-hpa": 0o711},
				[]string{"kubectl_complete-hpa", "LICENSE", "kubectl-hpa"})
			var outA, outB bytes.Buffer
			if err := Write(&outA, tc.format, a, stamp); err != nil {
				t.Fatal(err)
			}
			if err := Write(&outB, tc.format, b, stamp.In(time.FixedZone("elsewhere", 5*3600))); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(outA.Bytes(), outB.Bytes()) {
				t.Errorf("archives of the same files differ (%d and %d bytes)", outA.Len(), outB.Len())
			}
			if diff := cmp.Diff(want, readBack(t, tc.format, outA.Bytes())); diff != "" {
				t.Errorf("archive entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteRejectsBadEntries(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		files   []File
		wantErr string
	}{
		{name: "duplicate name", files: []File{{Name: "a", Src: src}, {Name: "a", Src: src}}, wantErr: "listed twice"},
		{name: "absolute name", files: []File{{Name: "/a", Src: src}}, wantErr: "clean relative path"},
		{name: "escaping name", files: []File{{Name: "../a", Src: src}}, wantErr: "clean relative path"},
		{name: "directory source", files: []File{{Name: "d", Src: dir}}, wantErr: "not a regular file"},
		{name: "missing source", files: []File{{Name: "m", Src: filepath.Join(dir, "missing")}}, wantErr: "opening"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(io.Discard, TarGz, tc.files, stamp)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Write() error = %v; want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    Format
		wantErr bool
	}{
		{name: "kubectl-hpa_v1.0.0_linux_amd64.tar.gz", want: TarGz},
		{name: "kubectl-hpa_v1.0.0_windows_arm64.zip", want: Zip},
		{name: "kubectl-hpa_v1.0.0_linux_amd64.tgz", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FormatOf(tc.name)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("FormatOf(%q) = %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
