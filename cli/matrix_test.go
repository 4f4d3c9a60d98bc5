package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/shrink"
	"github.com/locktorture/locktorture/summary"
)

// TestMatrixShrinkRealRun runs a real one-cell matrix with --shrink: set-px
// with overruns, wrongly expected to hold, breaks on every seed within a
// fraction of a second, so the cell is not as expected whatever the seed.
// Its failing seed is shrunk into OUT/shrink/RUN_ID/, and matrix.json and
// matrix.md name a smaller command that still shows the anomaly the seed
// found. It needs redis-server.
func TestMatrixShrinkRealRun(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	spec := writeSpec(t, dir, "wrong.yaml", `seeds: 1
defaults: {clients: 6, ttl: 200ms, hold: 5ms..20ms, duration: 2s, check-timeout: 30s}
cells:
  - {name: set-px-overrun, lock: set-px, overrun: 0.3, expect: holds}
`)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", spec, "--out", out, "--quiet", "--shrink", "--shrink-budget", "60s"}, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("exit %d, want %d (a cell not as expected)\n%s%s", code, exitInvalid, stdout.String(), stderr.String())
	}
	m := readMatrix(t, out)
	if len(m.Cells) != 1 || len(m.Cells[0].Seeds) != 1 {
		t.Fatalf("matrix.json: %+v", m)
	}
	c := m.Cells[0]
	sh := c.Shrunk
	if sh == nil || len(sh.Command) < 2 || sh.Note != "" {
		t.Fatalf("cell %s not shrunk: %+v\n%s", c.Name, sh, stdout.String())
	}
	id := c.Seeds[0].RunID
	if sh.Seed != 1 || sh.Dir != matrix.ShrinkDir+"/"+id {
		t.Errorf("shrunk seed %d in %q, want seed 1 in %s/%s", sh.Seed, sh.Dir, matrix.ShrinkDir, id)
	}

	// The command is smaller than the cell's: fewer clients or less time.
	clients, err := strconv.Atoi(argAfter(sh.Command, "--clients"))
	if err != nil {
		t.Fatalf("shrunk command %q: --clients: %v", sh.Command, err)
	}
	d, err := time.ParseDuration(argAfter(sh.Command, "--duration"))
	if err != nil {
		t.Fatalf("shrunk command %q: --duration: %v", sh.Command, err)
	}
	if clients > 6 || d > 2*time.Second || (clients == 6 && d == 2*time.Second) {
		t.Errorf("shrunk command %q is not smaller than 6 clients for 2s", sh.Command)
	}

	// Its folder holds shrink.json, whose smallest run shows again a kind
	// the failing seed found.
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(sh.Dir), shrink.FileName))
	if err != nil {
		t.Fatalf("the shrink folder: %v", err)
	}
	var res shrink.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s: %v", shrink.FileName, err)
	}
	if !res.Reproduced || res.Target.Kind == "" || c.Seeds[0].Counts[res.Target.Kind] == 0 {
		t.Fatalf("shrink kept %v, reproduced %v; the seed found %v", res.Target, res.Reproduced, c.Seeds[0].Counts)
	}
	if !slices.Equal(res.Smallest, sh.Command) {
		t.Errorf("matrix.json names %q, shrink.json %q", sh.Command, res.Smallest)
	}
	smallest, err := summary.Read(res.SmallestDir)
	if err != nil {
		t.Fatal(err)
	}
	if smallest.Counts[res.Target.Kind] == 0 || smallest.Run == nil || smallest.Run.Clients != clients {
		t.Errorf("the smallest run (%+v) does not show %s: %v", smallest.Run, res.Target.Kind, smallest.Counts)
	}

	md, err := os.ReadFile(filepath.Join(out, "matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "shrunk: `"+strings.Join(sh.Command, " ")+"`") {
		t.Errorf("matrix.md does not name the shrunk command %q:\n%s", sh.Command, md)
	}
	t.Logf("shrunk to %s", strings.Join(sh.Command, " "))
}

// argAfter is the value that follows flag in args, or "" without one.
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
