package museum

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/matrix"
)

// The sides a cell may run: the buggy program, the fixed one, or (any
// other words in its side: key) the setting a control changes.
const (
	SideBuggy = "buggy"
	SideFixed = "fixed"
)

// cellSide is the side of a cell: its side: key when it has one, else the
// program its lock runs from the exhibit's folder when that is
// $LOCKTORTURE_EXHIBIT/buggy or /fixed; empty when neither says. A cell is
// labelled with what it runs, never with what it is expected to do: a
// control on the buggy program and a fixed side that still breaks keep
// their true names.
func cellSide(side, lock string) string {
	if s := strings.TrimSpace(side); s != "" {
		return s
	}
	for _, f := range strings.Fields(strings.TrimPrefix(lock, "exec:")) {
		for _, v := range []string{"$" + ExhibitEnv + "/", "${" + ExhibitEnv + "}/"} {
			if rest, ok := strings.CutPrefix(f, v); ok {
				if p := path.Base(rest); p == SideBuggy || p == SideFixed {
					return p
				}
				return ""
			}
		}
	}
	return ""
}

// label is a side in the table's words: "buggy: v4.0.3", "fixed: v4.0.4",
// or a setting's own words.
func (x *ExhibitResult) label(side string) string {
	switch side {
	case SideBuggy:
		return "buggy: " + x.Buggy
	case SideFixed:
		return "fixed: " + x.Fixed
	case "":
		return "?"
	}
	return side
}

// checkSides reads the exhibit's spec for its cells' locks and side: keys
// (loosely: the matrix reads it strictly when it runs) and refuses, before
// any cell runs, a cell whose side neither its key nor its program says.
func checkSides(e *Exhibit) error {
	b, err := os.ReadFile(filepath.Join(e.Dir, e.Spec))
	if err != nil {
		return fmt.Errorf("exhibit %s: %w", e.Slug, err)
	}
	var spec struct {
		Cells []struct {
			Name string `yaml:"name"`
			Lock string `yaml:"lock"`
			Side string `yaml:"side"`
		} `yaml:"cells"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&spec); err != nil {
		return fmt.Errorf("exhibit %s: %s: %s", e.Slug, e.Spec, oneLine(err))
	}
	for i, c := range spec.Cells {
		if cellSide(c.Side, c.Lock) != "" {
			continue
		}
		name := fmt.Sprintf("cell %d", i+1)
		if c.Name != "" {
			name += " (" + c.Name + ")"
		}
		return fmt.Errorf("exhibit %s: %s: %s: say which side it runs, side: %s, %s or the setting it changes, in words (its lock runs neither $%s/%s nor /%s)",
			e.Slug, e.Spec, name, SideBuggy, SideFixed, ExhibitEnv, SideBuggy, SideFixed)
	}
	return nil
}

// resolveSides sets each cell's side to the one it ran (see cellSide), so
// that museum.json says it.
func resolveSides(cells []matrix.CellResult) {
	for i := range cells {
		cells[i].Side = cellSide(cells[i].Side, cells[i].Lock)
	}
}
