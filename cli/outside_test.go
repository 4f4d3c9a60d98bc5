package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutsideModule builds examples/outside, a module outside this package
// tree with its own lock, fault (and its own setting) and checker, and runs
// its torture: a run sets the fault's setting from the command line, and its
// matrix sets it from the spec and has a cell expect the outside checker's
// kind.
func TestOutsideModule(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "torture-outside")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "../examples/outside"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the outside module: %v\n%s", err, out)
	}

	one := exec.Command(bin, "run", "--lock", "token", "--faults", "flush-keys", "--flush-mode", "async",
		"--clients", "4", "--ttl", "300ms", "--hold", "50ms..100ms", "--duration", "3s", "--nemesis-interval", "500ms",
		"--seed", "1", "--quiet", "--out", dir, "--run-id", "flush", "--expect", "invalid")
	if out, err := one.CombinedOutput(); err != nil {
		t.Fatalf("run with the outside fault: %v\n%s", err, out)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "flush", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hist), "every node, async") {
		t.Errorf("the fault did not get --flush-mode async from the command line")
	}
	if !strings.Contains(string(hist), `"flush-mode":"async"`) {
		t.Errorf("the history header does not record flush-mode (so the replay command would lose it)")
	}

	out := filepath.Join(dir, "matrix")
	matrix := exec.Command(bin, "matrix", "spec.yaml", "--out", out, "--quiet")
	matrix.Dir = "../examples/outside"
	if b, err := matrix.CombinedOutput(); err != nil {
		t.Fatalf("matrix of the outside module: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cells []struct {
			Name     string `json:"name"`
			Expected string `json:"expected"`
			Result   string `json:"result"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Cells {
		if c.Name == "token-overrun-long-hold" {
			found = c.Expected == "long-hold"
		}
	}
	if !found {
		t.Errorf("no cell expecting the outside kind long-hold in %s", b)
	}

	// The built-in torture knows none of it: the same spec is refused
	// before anything runs, naming what it does not know.
	var stdout, stderr strings.Builder
	if code := run([]string{"matrix", "../examples/outside/spec.yaml", "--out", filepath.Join(dir, "m2")}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), `unknown lock "get-then-set"`) {
		t.Errorf("built-in torture on the outside spec: exit %d, %q", code, stderr.String())
	}
}

// TestPinnedModule builds examples/pinned, a team's own torture over
// go-redsync/redsync v4.0.3, older than the version the torture command's
// adapters require: the core pins no lock library, so the binary holds
// v4.0.3 itself, and a run shows that version's own bug (its Unlock
// reports a key it does not hold as deleted: a foreign release).
func TestPinnedModule(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "torture-pinned")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "../examples/pinned"
	// Outside the checkout's workspace, as a team's own module is: the
	// workspace would raise the pin to the adapters' version.
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the pinned module: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mods), "github.com/go-redsync/redsync/v4\tv4.0.3") {
		t.Fatalf("the binary does not hold redsync v4.0.3:\n%s", mods)
	}

	run := exec.Command(bin, "run", "--lock", "redsync-v4.0.3", "--clients", "4", "--ttl", "300ms", "--hold", "5ms..30ms",
		"--overrun", "0.2", "--duration", "3s", "--seed", "1", "--quiet", "--out", dir, "--run-id", "pinned", "--expect", "invalid")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("run the pinned lock: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pinned", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Counts["foreign-release"] == 0 {
		t.Errorf("v4.0.3's Unlock reported no key it did not hold as deleted: counts %v", sum.Counts)
	}
}
