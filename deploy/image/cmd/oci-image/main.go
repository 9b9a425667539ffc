// Command oci-image builds the kubectl-hpa image (make image) and unpacks it (the in-cluster
// end-to-end test), with go-containerregistry; see package ociimage.
//
//	oci-image build -version V -revision SHA -created UNIX -license LICENSE \
//	    -bin linux/amd64=PATH -bin linux/arm64=PATH -layout DIR -archive FILE
//	oci-image unpack -layout DIR -ref V -platform linux/amd64 -rootfs DIR -config FILE
//
// Both print the index digest on stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/deploy/image/ociimage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "oci-image: %v\n", err)
		os.Exit(1)
	}
}

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q: want os/arch=path", s)
	}
	b[platform] = path
	return nil
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: oci-image build|unpack [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	layoutDir := fs.String("layout", "", "OCI layout directory")
	switch args[0] {
	case "build":
		spec := ociimage.Spec{Binaries: binaries{}}
		fs.StringVar(&spec.Version, "version", "", "release version (the image's ref name)")
		fs.StringVar(&spec.Revision, "revision", "", "full commit hash")
		fs.StringVar(&spec.Source, "source", "https://github.com/kubectl-hpa/kubectl-hpa", "source repository")
		fs.StringVar(&spec.License, "license", "", "LICENSE file")
		created := fs.Int64("created", 0, "commit time, Unix seconds")
		fs.Var(binaries(spec.Binaries), "bin", "os/arch=path of a static binary (repeat)")
		archive := fs.String("archive", "", "oci-archive tarball to write")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if spec.Version == "" || spec.Revision == "" || spec.License == "" || *created == 0 || *layoutDir == "" || *archive == "" {
			return fmt.Errorf("build needs -version, -revision, -license, -created, -layout and -archive")
		}
		spec.Created = time.Unix(*created, 0).UTC()
		idx, err := ociimage.Build(spec)
		if err != nil {
			return err
		}
		digest, err := ociimage.WriteLayout(*layoutDir, spec.Version, idx)
		if err != nil {
			return fmt.Errorf("writing the layout: %w", err)
		}
		if _, err := ociimage.Read(*layoutDir, spec.Version); err != nil {
			return err
		}
		if err := ociimage.WriteArchive(*archive, *layoutDir, spec.Created); err != nil {
			return fmt.Errorf("writing the archive: %w", err)
		}
		fmt.Println(digest)
		return nil
	case "unpack":
		ref := fs.String("ref", "", "image name in the layout (the version)")
		platform := fs.String("platform", "linux/amd64", "platform to unpack")
		rootDir := fs.String("rootfs", "", "directory to unpack the filesystem into")
		configOut := fs.String("config", "", "file to write the image config JSON to")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *layoutDir == "" || *ref == "" || *rootDir == "" || *configOut == "" {
			return fmt.Errorf("unpack needs -layout, -ref, -rootfs and -config")
		}
		idx, err := ociimage.Read(*layoutDir, *ref)
		if err != nil {
			return err
		}
		cf, err := ociimage.Unpack(idx, *platform, *rootDir)
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(cf, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*configOut, b, 0o644); err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Println(digest)
		return nil
	}
	return fmt.Errorf("unknown command %q: use build or unpack", args[0])
}
