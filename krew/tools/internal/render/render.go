// Package render fills a krew-release-bot style manifest template for one release from local
// archives, so the manifest's sha256 sums are those of the files the release uploads.
package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// values are the template's data, named as krew-release-bot names them.
type values struct {
	// TagName is the release tag, leading v included.
	TagName string
}

// Manifest renders tmpl for tag. addURIAndSha "URL" .TagName expands to the URL (itself a
// template over the same values) and the sha256 of the archive in distDir named like the URL's last
// path element, in krew-release-bot's "uri: ...\n    sha256: ..." form. The tag is not checked
// here: the krew validator that runs on the output reports a bad version in krew's own words.
func Manifest(tmpl []byte, tag, distDir string) ([]byte, error) {
	funcs := template.FuncMap{
		"addURIAndSha": func(rawURL, tag string) (string, error) {
			u, err := execute("url", []byte(rawURL), nil, values{TagName: tag})
			if err != nil {
				return "", err
			}
			parsed, err := url.Parse(string(u))
			if err != nil {
				return "", fmt.Errorf("archive URL %q: %w", u, err)
			}
			sum, err := sha256File(filepath.Join(distDir, path.Base(parsed.Path)))
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", u, sum), nil
		},
	}
	return execute("manifest", tmpl, funcs, values{TagName: tag})
}

func execute(name string, text []byte, funcs template.FuncMap, v values) ([]byte, error) {
	t, err := template.New(name).Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("parsing %s template: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("rendering %s template: %w", name, err)
	}
	return buf.Bytes(), nil
}

func sha256File(name string) (sum string, err error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("reading release archive (build it with make dist and the same VERSION): %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// OnlyPlatforms keeps, of the template's spec.platforms, those whose selector names one of
// platforms ("os/arch"), every other line as it is: the manifest of a build for those alone
// (make krew-local), whose install needs no other archive. A platform the template lacks, or
// none asked for, is an error.
func OnlyPlatforms(tmpl []byte, platforms []string) ([]byte, error) {
	if len(platforms) == 0 {
		return nil, errors.New("no platform to keep")
	}
	lines := strings.SplitAfter(string(tmpl), "\n")
	const item, field = "  - selector:", "        "
	var out strings.Builder
	found := map[string]bool{}
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], item) {
			out.WriteString(lines[i])
			i++
			continue
		}
		// One platform: its lines up to the next item or the end of the list.
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], item) && (strings.HasPrefix(lines[end], "    ") || strings.TrimSpace(lines[end]) == "") {
			end++
		}
		var goos, goarch string
		for _, l := range lines[i:end] {
			if v, ok := strings.CutPrefix(l, field+"os: "); ok {
				goos = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(l, field+"arch: "); ok {
				goarch = strings.TrimSpace(v)
			}
		}
		if slices.Contains(platforms, goos+"/"+goarch) {
			found[goos+"/"+goarch] = true
			out.WriteString(strings.Join(lines[i:end], ""))
		}
		i = end
	}
	for _, p := range platforms {
		if !found[p] {
			return nil, fmt.Errorf("the template has no platform %s", p)
		}
	}
	return []byte(out.String()), nil
}
