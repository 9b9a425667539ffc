// Package archive writes release archives whose bytes depend only on the files' names, contents
// and executable bits and on one given modification time, so that a release rebuilt from the same
// commit has the same sha256 sums as the one the krew manifest names.
package archive

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// File is one regular file of an archive.
type File struct {
	// Name is the slash-separated path inside the archive.
	Name string
	// Src is the file on disk whose contents are archived.
	Src string
}

// Format is the container format of an archive.
type Format int

const (
	// TarGz is a gzip-compressed ustar archive (Linux and macOS releases).
	TarGz Format = iota
	// Zip is a deflate-compressed zip archive (Windows releases).
	Zip
)

// FormatOf picks the format from an archive's file name.
func FormatOf(name string) (Format, error) {
	switch {
	case strings.HasSuffix(name, ".tar.gz"):
		return TarGz, nil
	case strings.HasSuffix(name, ".zip"):
		return Zip, nil
	default:
		return 0, fmt.Errorf("archive name %q ends in neither .tar.gz nor .zip", name)
	}
}

// Write archives files into w, ordered by name, each stamped with mtime, owned by 0:0, with mode
// 0755 when any execute bit is set on its source and 0644 otherwise (umask and checkout do not leak
// into the archive).
func Write(w io.Writer, format Format, files []File, mtime time.Time) error {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	for i, f := range files {
		if f.Name == "" || path.IsAbs(f.Name) || path.Clean(f.Name) != f.Name || strings.HasPrefix(f.Name, "../") {
			return fmt.Errorf("archive entry name %q must be a clean relative path", f.Name)
		}
		if i > 0 && files[i-1].Name == f.Name {
			return fmt.Errorf("archive entry %q is listed twice", f.Name)
		}
	}
	mtime = mtime.UTC().Truncate(time.Second)
	switch format {
	case TarGz:
		return writeTarGz(w, files, mtime)
	case Zip:
		return writeZip(w, files, mtime)
	default:
		return fmt.Errorf("unknown archive format %d", format)
	}
}

func writeTarGz(w io.Writer, files []File, mtime time.Time) error {
	// No name and a zero modification time in the gzip header: gzip -n.
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("creating gzip writer: %w", err)
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		err := withSource(f, func(r io.Reader, size int64, mode int64) error {
			hdr := &tar.Header{
				Typeflag: tar.TypeReg,
				Name:     f.Name,
				Size:     size,
				Mode:     mode,
				ModTime:  mtime,
				Format:   tar.FormatUSTAR,
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("writing tar header of %s: %w", f.Name, err)
			}
			if _, err := io.Copy(tw, r); err != nil {
				return fmt.Errorf("writing %s into tar: %w", f.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("closing gzip: %w", err)
	}
	return nil
}

func writeZip(w io.Writer, files []File, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		err := withSource(f, func(r io.Reader, _ int64, mode int64) error {
			hdr := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: mtime}
			hdr.SetMode(os.FileMode(mode))
			fw, err := zw.CreateHeader(hdr)
			if err != nil {
				return fmt.Errorf("writing zip header of %s: %w", f.Name, err)
			}
			if _, err := io.Copy(fw, r); err != nil {
				return fmt.Errorf("writing %s into zip: %w", f.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("closing zip: %w", err)
	}
	return nil
}

// withSource opens f's source, checks it is a regular file and passes its reader, size and
// normalised mode to fn.
func withSource(f File, fn func(r io.Reader, size int64, mode int64) error) (err error) {
	src, err := os.Open(f.Src)
	if err != nil {
		return fmt.Errorf("opening %s for archive entry %s: %w", f.Src, f.Name, err)
	}
	defer func() { err = errors.Join(err, src.Close()) }()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.Src, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file; archives hold regular files only", f.Src)
	}
	var mode int64 = 0o644
	if st.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	return fn(src, st.Size(), mode)
}
