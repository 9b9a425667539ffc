// Command krew-render renders the krew manifest template for one release tag, with the sha256
// sums of the archives in a local dist directory.
//
//	krew-render -template krew/hpa.yaml -tag v1.0.0 -dist dist -o dist/hpa.yaml [-platforms linux/amd64]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kubectl-hpa/kubectl-hpa/krew/tools/internal/render"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "krew-render: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("krew-render", flag.ContinueOnError)
	tmplPath := fs.String("template", "", "manifest template")
	tag := fs.String("tag", "", "release tag, for example v1.0.0")
	dist := fs.String("dist", "", "directory holding the release archives")
	out := fs.String("o", "", "rendered manifest to write")
	only := fs.String("platforms", "", "keep only these platforms (os/arch, comma-separated), for a build of those alone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tmplPath == "" || *tag == "" || *dist == "" || *out == "" || fs.NArg() != 0 {
		return errors.New("usage: krew-render -template FILE -tag TAG -dist DIR -o FILE [-platforms OS/ARCH,...]")
	}
	tmpl, err := os.ReadFile(*tmplPath)
	if err != nil {
		return fmt.Errorf("reading template: %w", err)
	}
	if *only != "" {
		if tmpl, err = render.OnlyPlatforms(tmpl, strings.Split(*only, ",")); err != nil {
			return err
		}
	}
	manifest, err := render.Manifest(tmpl, *tag, *dist)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, manifest, 0o644); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	return nil
}
