package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the new content replaces the old whole; a write that fails
// leaves the old file and no temp file.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	put := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := Write(path, put("one")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	if err := Write(path, func(w io.Writer) error { io.WriteString(w, "tw"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("after a failed write: %q", b)
	}
	if err := Write(path, put("two")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != "two" || st.Mode().Perm() != 0o644 {
		t.Errorf("after a second write: %q %v", b, st.Mode())
	}
	left := filepath.Join(filepath.Dir(path), ".m.json.123")
	os.WriteFile(left, []byte("{"), 0o644)
	RemoveTemps(path)
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("files left: %v", ents)
	}
}
