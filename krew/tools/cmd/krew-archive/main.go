// Command krew-archive writes one reproducible release archive (.tar.gz or .zip, chosen by the
// output name) holding the given files at its root, all stamped with one modification time.
//
//	krew-archive -o dist/kubectl-hpa_v1.0.0_linux_amd64.tar.gz -mtime 1764496800 bin/kubectl-hpa LICENSE kubectl_complete-hpa
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/krew/tools/internal/archive"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "krew-archive: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) (err error) {
	fs := flag.NewFlagSet("krew-archive", flag.ContinueOnError)
	out := fs.String("o", "", "archive to write; its name ends in .tar.gz or .zip")
	mtime := fs.Int64("mtime", -1, "modification time of every entry, in seconds since the epoch (the commit time)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *mtime < 0 || fs.NArg() == 0 {
		return errors.New("usage: krew-archive -o ARCHIVE -mtime UNIX-SECONDS FILE...")
	}
	format, err := archive.FormatOf(*out)
	if err != nil {
		return err
	}
	var files []archive.File
	for _, src := range fs.Args() {
		files = append(files, archive.File{Name: filepath.Base(src), Src: src})
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("creating archive: %w", err)
	}
	defer func() {
		err = errors.Join(err, f.Close())
		if err != nil {
			_ = os.Remove(*out)
		}
	}()
	return archive.Write(f, format, files, time.Unix(*mtime, 0))
}
