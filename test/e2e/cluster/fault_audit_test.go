package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFaultAuditEndLineSeparatesATornLineFromTheNextWriter(t *testing.T) {
	cases := []struct {
		name, before, want string
	}{
		{"torn last line gets its newline", "{\"a\":1}\n{\"tor", "{\"a\":1}\n{\"tor\n"},
		{"complete log is left alone", "{\"a\":1}\n", "{\"a\":1}\n"},
		{"empty log is left alone", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := (auditLog{path: path}).endLine(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("log %q, want %q", got, tc.want)
			}
		})
	}
	if err := (auditLog{path: filepath.Join(t.TempDir(), "missing.log")}).endLine(); err != nil {
		t.Errorf("missing log: %v, want nil (the API server has not written yet)", err)
	}
}
