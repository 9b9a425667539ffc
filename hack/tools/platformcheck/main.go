// Command platformcheck type-checks Go packages, with every package they import, for other
// platforms than this machine's, the way the compiler's front end would build them there:
// for each GOOS/GOARCH it loads the packages' files as `go list` selects them for that platform
// (build constraints, _<os>_<arch>.go names, CGO_ENABLED=0 as the release builds) and
// type-checks all of them from source, function bodies included, the standard library too.
// Nothing is compiled to machine code or linked, so it costs a fraction of a cross build
// (hack/typecheck-platforms.sh runs it in make verify for the platforms make test does not
// build). What it does not check is what only the compiler's back end and the linker see: a
// function declared without a body and implemented in assembly, a //go:linkname target. The
// plugin has neither; a cross build (make build-all) checks them.
//
// Usage: platformcheck [-C dir] [-tags list] -platforms "os/arch ..." package...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("C", ".", "directory to load the packages from (its module)")
	tags := flag.String("tags", "", "build tags, comma-separated")
	list := flag.String("platforms", "", "space-separated GOOS/GOARCH pairs")
	flag.Parse()
	platforms := strings.Fields(*list)
	if len(platforms) == 0 || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: platformcheck [-C dir] [-tags list] -platforms \"os/arch ...\" package...")
		os.Exit(2)
	}
	failed := false
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(os.Stderr, "platformcheck: %q is not GOOS/GOARCH\n", p)
			os.Exit(2)
		}
		if !check(*dir, *tags, goos, goarch, flag.Args()) {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks patterns and their dependencies for goos/goarch and reports whether every
// package loaded and type-checked without an error.
func check(dir, tags, goos, goarch string, patterns []string) bool {
	start := time.Now()
	platform := goos + "/" + goarch
	var buildFlags []string
	if tags != "" {
		buildFlags = append(buildFlags, "-tags="+tags)
	}
	cfg := &packages.Config{
		// NeedDeps with NeedSyntax and NeedTypes: every package of the import graph is parsed and
		// type-checked from source with its function bodies (go/packages skips bodies only of
		// dependencies loaded without NeedDeps), none read from export data (which would need
		// a compile for the platform).
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax | packages.NeedModule,
		Dir:        dir,
		Env:        append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS="),
		BuildFlags: buildFlags,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "platformcheck: %s: %v\n", platform, err)
		return false
	}
	n, errs := 0, 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs++
			fmt.Fprintf(os.Stderr, "platformcheck: %s: %s: %v\n", platform, p.PkgPath, e)
		}
	})
	if len(pkgs) == 0 {
		fmt.Fprintf(os.Stderr, "platformcheck: %s: no packages match %s\n", platform, strings.Join(patterns, " "))
		return false
	}
	if errs > 0 {
		fmt.Fprintf(os.Stderr, "platformcheck: %s: %d error(s) in %d packages\n", platform, errs, n)
		return false
	}
	fmt.Printf("platformcheck: %s: %d packages type-checked in %.1fs\n", platform, n, time.Since(start).Seconds())
	return true
}
