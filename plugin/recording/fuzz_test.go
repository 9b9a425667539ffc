package recording

import (
	"bytes"
	"testing"
)

// reencode writes rec back out in its own order: each term, then its syncs.
func reencode(t *testing.T, rec *Recording) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(rec.Name, &buf, false, rec.Header)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, term := range rec.Terms {
		if err := w.Term(term); err != nil {
			t.Fatal(err)
		}
		for ; i < len(rec.Syncs) && rec.Syncs[i].Term == term.Term; i++ {
			if err := w.Sync(rec.Syncs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if i != len(rec.Syncs) {
		t.Fatalf("%d syncs belong to no term", len(rec.Syncs)-i)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzRead: the decoder never panics, and whatever it accepts it reads back the same after
// writing it out again (what a replay reads is what was recorded).
func FuzzRead(f *testing.F) {
	for _, r := range reconciles() {
		f.Add(encode(f, SyncOf(r)))
	}
	f.Add([]byte(`{"apiVersion":"hpa.kubectl-hpa.io/v1alpha1","kind":"Recording","version":2}`))
	f.Add([]byte("{\"apiVersion\":\"hpa.kubectl-hpa.io/v1alpha1\",\"kind\":\"Recording\",\"version\":1,\"started\":\"2026-12-01T00:00:00Z\",\"controller\":{\"syncPeriod\":\"-2562047h47m16.854775808s\"}}\n{\"kind\":\"Term\",\"term\":-1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Read("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		once := reencode(t, rec)
		again, err := Read("fuzz", bytes.NewReader(once))
		if err != nil {
			t.Fatalf("a recording read back fails to read once written out: %v\n%s", err, once)
		}
		if twice := reencode(t, again); !bytes.Equal(once, twice) {
			t.Fatalf("reading changes a recording written out:\n%s\n%s", once, twice)
		}
	})
}
