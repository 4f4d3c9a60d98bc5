package locktorture

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// TestCheckOptions: an outside workload's op names are accepted only when
// declared, and an --out that cannot be a folder is the caller's mistake.
func TestCheckOptions(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.jsonl")
	body := strings.Join([]string{
		`{"t":1,"type":"invoke","op":"acquire","id":1,"process":1,"client":1,"key":"k","ttl_ms":100}`,
		`{"t":2,"type":"ok","op":"acquire","id":1,"process":1,"client":1,"key":"k","lease":"a","ttl_ms":100}`,
		`{"t":3,"type":"invoke","op":"transfer","id":2,"process":1,"client":1,"key":"acct","value":5}`,
		`{"t":4,"type":"ok","op":"transfer","id":2,"process":1,"client":1,"key":"acct","value":5}`,
	}, "\n") + "\n"
	file := filepath.Join(dir, "plain-file")
	for p, b := range map[string]string{hist: body, file: "x"} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		opts CheckOptions
		want string // "" when the check must succeed
	}{
		{"undeclared op", CheckOptions{}, `unknown op "transfer"`},
		{"declared op", CheckOptions{Ops: []history.Op{"transfer"}}, ""},
		{"out is a file", CheckOptions{Ops: []history.Op{"transfer"}, OutDir: filepath.Join(file, "sub")}, "check output folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(context.Background(), dir, tc.opts)
			if tc.want != "" {
				if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want a usage error mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Verdict != checker.Valid || len(res.Files) != 0 {
				t.Fatalf("verdict %s, files %v", res.Report.Verdict, res.Files)
			}
		})
	}
}
