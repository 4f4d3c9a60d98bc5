package cli

import (
	"bytes"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
)

const (
	tableBegin = "<!-- flags:begin -->\n"
	tableEnd   = "<!-- flags:end -->"
)

// flagsPage is the page that holds the flag table.
const flagsPage = "../docs/running.md"

// TestFlagTableInDocs: the flag table of docs/running.md is the one the
// declarations make.
func TestFlagTableInDocs(t *testing.T) {
	want, err := FlagTable(locktorture.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(flagsPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i, j := strings.Index(page, tableBegin), strings.Index(page, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", flagsPage, tableBegin, tableEnd)
	}
	got := page[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		page = page[:i+len(tableBegin)] + want + page[j:]
		if err := os.WriteFile(flagsPage, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the flag table differs from the declarations (UPDATE_DOCS=1 go test ./cli -run FlagTable rewrites it); want:\n%s", flagsPage, want)
}

var helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// TestRunFlagsAreTheDeclarations: torture run -h lists exactly the declared
// settings, the registries' entries' own included.
func TestRunFlagsAreTheDeclarations(t *testing.T) {
	regs := locktorture.Builtin()
	var out, errb bytes.Buffer
	if code := Run([]string{"run", "-h"}, &out, &errb, regs); code != exitValid {
		t.Fatalf("run -h: exit %d: %s", code, errb.String())
	}
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
		flags = append(flags, m[1])
	}
	all, err := runSettings(regs)
	if err != nil {
		t.Fatal(err)
	}
	// Every setting is a flag, and so is each older spelling of one.
	want := all.Names()
	for _, s := range all.All() {
		want = append(want, s.Aliases...)
	}
	sort.Strings(want)
	sort.Strings(flags)
	if strings.Join(flags, " ") != strings.Join(want, " ") {
		t.Errorf("flags of run -h:\n  %v\ndeclared settings:\n  %v", flags, want)
	}
	for _, name := range []string{"latency", "direction", "partition-clients", "clock-jump"} {
		if _, ok := all.Lookup(name); !ok {
			t.Errorf("the faults' own setting %q is not a flag", name)
		}
	}
}
