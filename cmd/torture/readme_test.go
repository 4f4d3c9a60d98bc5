package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/locks/libs"
	"github.com/locktorture/locktorture/matrix"
)

// The lock and fault tables of docs/locks.md and docs/faults.md are prose
// for people; faults.yaml is the same claims as data. The tables cover the
// third-party libraries too, so the test lives with the command that
// bundles them. Rather than generate the prose, this test reads
// the tables and checks that the two say the same things: every anomaly
// kind and class a row names has a cell that expects it, every lock that
// promises to survive something has a control cell, and every cell's
// expectation is claimed by the row of its lock or of one of its faults.

// readmeGaps are README claims no cell can show yet, with the reason.
var readmeGaps = map[string]string{}

var backticked = regexp.MustCompile("`([^`]+)`")

// table returns the rows (cells split on '|') of the Markdown table whose
// header line starts with header.
func table(t *testing.T, readme, header string) [][]string {
	t.Helper()
	var rows [][]string
	in := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		case in:
			return rows
		}
	}
	if len(rows) == 0 {
		t.Fatalf("README has no table with header %q", header)
	}
	return rows
}

func ticks(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// claims splits a table cell's backticked words into anomaly kinds,
// classes and lock names.
func claims(s string, lockNames map[string]bool) (found []checker.Kind, classes []checker.Class, lks []string) {
	kinds := map[checker.Kind][]checker.Class{}
	for _, e := range checker.Builtin().Entries() {
		for k, cs := range e.Kinds {
			kinds[k] = append(kinds[k], cs...)
		}
	}
	known := func(k checker.Kind) bool { _, ok := kinds[k]; return ok }
	allClasses := map[checker.Class]bool{}
	for _, cs := range kinds {
		for _, c := range cs {
			allClasses[c] = true
		}
	}
	for _, w := range ticks(s) {
		switch {
		case known(checker.Kind(w)):
			found = append(found, checker.Kind(w))
		case allClasses[checker.Class(w)]:
			classes = append(classes, checker.Class(w))
		case lockNames[w]:
			lks = append(lks, w)
		}
	}
	return
}

// seen is what the cells of one lock, or of one fault, expect.
type seen struct {
	kinds   map[checker.Kind]bool
	classes map[checker.Class]bool
	locks   map[string]bool
	breaks  bool
	holds   bool
}

// addSeen records what cell c expects under m[key].
func addSeen(m map[string]*seen, key string, c *matrix.Cell) {
	s := m[key]
	if s == nil {
		s = &seen{kinds: map[checker.Kind]bool{}, classes: map[checker.Class]bool{}, locks: map[string]bool{}}
		m[key] = s
	}
	s.locks[c.Lock] = true
	if br := c.Expect.Breaks; br != nil {
		s.breaks, s.kinds[br.Kind] = true, true
		if br.Class != "" {
			s.classes[br.Class] = true
		}
	} else {
		s.holds = true
		for _, p := range c.Expect.Absent {
			s.kinds[p.Kind] = true
		}
	}
}

// unexpected lists, in the README's words, the kinds and classes a row
// claims that no cell of s expects.
func (s *seen) unexpected(kinds []checker.Kind, classes []checker.Class) []string {
	var out []string
	for _, k := range kinds {
		if !s.kinds[k] {
			out = append(out, string(k))
		}
	}
	for _, c := range classes {
		if !s.classes[c] {
			out = append(out, "a "+string(c)+" double holder")
		}
	}
	return out
}

func TestReadmeAgreesWithFaultsYAML(t *testing.T) {
	var readme string
	for _, page := range []string{"../../docs/locks.md", "../../docs/faults.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		readme += string(b) + "\n"
	}
	regs := locktorture.Builtin()
	if err := libs.Register(regs.Locks); err != nil {
		t.Fatal(err)
	}
	spec, err := matrix.Load("../../matrix/faults.yaml", regs)
	if err != nil {
		t.Fatal(err)
	}
	lockNames := map[string]bool{}
	for _, e := range regs.Locks.Entries() {
		lockNames[e.Name] = true
	}

	byLock, byFault := map[string]*seen{}, map[string]*seen{}
	for i := range spec.Cells {
		c := &spec.Cells[i]
		addSeen(byLock, c.Lock, c)
		for _, f := range c.Faults {
			addSeen(byFault, f, c)
		}
	}
	readmeLocks := readmeLocksAgree(t, readme, byLock, lockNames)
	readmeFaults := readmeFaultsAgree(t, readme, byFault, lockNames)
	cellsClaimed(t, spec, readmeLocks, readmeFaults)
	for _, e := range regs.Faults.Entries() {
		if _, ok := readmeFaults[e.Name]; !ok {
			t.Errorf("fault %s is missing from the README's fault table", e.Name)
		}
	}
}

// readmeLocksAgree checks each row of the README's lock tables against the
// cells of faults.yaml of that lock (byLock), and returns the rows by lock.
func readmeLocksAgree(t *testing.T, readme string, byLock map[string]*seen, lockNames map[string]bool) map[string][]string {
	t.Helper()
	gap := func(claim string) bool { return readmeGaps[claim] != "" }

	lockRows := table(t, readme, "| lock | algorithm | breaks under | survives |")
	// The third-party libraries' table has the same columns.
	lockRows = append(lockRows, table(t, readme, "| `--lock` | library and what it does | what breaks it (like) | what it should survive |")...)
	readmeLocks := map[string][]string{}
	for _, row := range lockRows {
		name := ticks(row[0])[0]
		readmeLocks[name] = row
		s := byLock[name]
		if s == nil {
			t.Errorf("README lock %s has no cell in faults.yaml", name)
			continue
		}
		kinds, classes, _ := claims(row[2], lockNames)
		for _, claim := range s.unexpected(kinds, classes) {
			t.Errorf("README: %s breaks with %s; faults.yaml has no cell of %s expecting it", name, claim, name)
		}
		if !s.breaks && !gap("lock "+name+" breaks") {
			t.Errorf("README: %s breaks under %q; faults.yaml has no breaking cell of it", name, row[2])
		}
		if !strings.Contains(row[3], "nothing else") && !s.holds {
			t.Errorf("README: %s survives %q; faults.yaml has no control cell of it", name, row[3])
		}
	}
	return readmeLocks
}

// readmeFaultsAgree checks each row of the README's fault table against the
// cells of faults.yaml with that fault (byFault), and returns the rows by
// fault.
func readmeFaultsAgree(t *testing.T, readme string, byFault map[string]*seen, lockNames map[string]bool) map[string][]string {
	t.Helper()
	faultRows := table(t, readme, "| `--faults` | what it does | what it shows |")
	readmeFaults := map[string][]string{}
	for _, row := range faultRows {
		kinds, classes, lks := claims(row[2], lockNames)
		for _, name := range ticks(row[0]) {
			readmeFaults[name] = row
			if len(kinds)+len(lks) == 0 {
				continue // no claim to check
			}
			s := byFault[name]
			if s == nil {
				t.Errorf("README fault %s claims %q; faults.yaml has no cell with it", name, row[2])
				continue
			}
			for _, claim := range s.unexpected(kinds, classes) {
				t.Errorf("README: %s shows %s; faults.yaml has no cell with %s expecting it", name, claim, name)
			}
			for _, l := range lks {
				if !s.locks[l] {
					t.Errorf("README: %s names lock %s; faults.yaml has no cell of %s under %s", name, l, l, name)
				}
			}
		}
	}
	return readmeFaults
}

// cellsClaimed checks the other way: every cell is a claim of the README,
// its expected kind named by the row of its lock or of one of its faults.
func cellsClaimed(t *testing.T, spec *matrix.Spec, readmeLocks, readmeFaults map[string][]string) {
	t.Helper()
	for i := range spec.Cells {
		c := &spec.Cells[i]
		row, ok := readmeLocks[c.Lock]
		if !ok {
			t.Errorf("cell %s: lock %s is not in the README's lock table", c.Name, c.Lock)
			continue
		}
		text := row[2] + " " + row[3]
		for _, f := range c.Faults {
			fr, ok := readmeFaults[f]
			if !ok {
				t.Errorf("cell %s: fault %s is not in the README's fault table", c.Name, f)
				continue
			}
			text += " " + fr[2]
		}
		if br := c.Expect.Breaks; br != nil && !strings.Contains(text, "`"+string(br.Kind)+"`") {
			t.Errorf("cell %s expects %s, which neither the README row of %s nor of its faults claims", c.Name, br.Kind, c.Lock)
		}
	}
}
