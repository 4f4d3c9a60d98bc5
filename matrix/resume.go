package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/internal/atomicfile"
)

// book keeps a result's cells in plan order as runs land in it, from this
// process or from the matrix.json a killed one left (--resume).
type book struct {
	res   *Result
	cells []Cell
	def   Params
	pos   map[int]int // selected cell index -> index in res.Cells
	have  map[string]bool
}

func newBook(res *Result, cells []Cell, def Params) *book {
	return &book{res: res, cells: cells, def: def, pos: map[int]int{}, have: map[string]bool{}}
}

func runID(cell string, seed int64) string { return fmt.Sprintf("%s-seed%d", cell, seed) }

// cell returns the result of selected cell i, adding it in plan order.
func (b *book) cell(i int) *CellResult {
	if p, ok := b.pos[i]; ok {
		return &b.res.Cells[p]
	}
	at := 0
	for j, p := range b.pos {
		if j < i {
			at = max(at, p+1)
		}
	}
	b.res.Cells = slices.Insert(b.res.Cells, at, newCellResult(&b.cells[i]))
	for j, p := range b.pos {
		if p >= at {
			b.pos[j] = p + 1
		}
	}
	b.pos[i] = at
	return &b.res.Cells[at]
}

// add records a finished run of selected cell i, its seeds kept in plan
// order, and returns where it landed.
func (b *book) add(i int, sr SeedResult) *SeedResult {
	cr := b.cell(i)
	order := b.res.Plan[i].Seeds
	at := len(cr.Seeds)
	for j, s := range cr.Seeds {
		if slices.Index(order, s.Seed) > slices.Index(order, sr.Seed) {
			at = j
			break
		}
	}
	cr.Seeds = slices.Insert(cr.Seeds, at, sr)
	cr.summarise(b.res.MinRate)
	if !sr.Interrupted {
		b.have[runID(cr.Name, sr.Seed)] = true
	}
	return &cr.Seeds[at]
}

func (b *book) done(r plannedRun) bool { return b.have[runID(b.cells[r.cell].Name, r.seed)] }

// resume takes over the runs that the matrix.json in dir records as
// finished, when that file belongs to this very matrix (same spec, build,
// plan and shard); runs it records as interrupted are run again. No
// matrix.json is a fresh start, so a CI job can always pass --resume.
func (b *book) resume(dir string) error {
	if dir == "" {
		return errors.New("--resume needs --out: the folder of the matrix to resume")
	}
	removeTemps(dir)
	path := filepath.Join(dir, JSONFile)
	prev, err := readResult(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if why := b.res.Identity.differs(prev.Identity, "this matrix", path); why != "" {
		return fmt.Errorf("--resume: %s; use another --out", why)
	}
	if !sameShard(b.res.Shard, prev.Shard) {
		return fmt.Errorf("--resume: %s holds shard %s, not %s", path, shardText(prev.Shard), shardText(b.res.Shard))
	}
	index := map[string]int{}
	for i, c := range b.cells {
		index[c.Name] = i
	}
	for _, c := range prev.Cells {
		i, ok := index[c.Name]
		if !ok {
			return fmt.Errorf("--resume: %s has cell %q, which the plan has not", path, c.Name)
		}
		for _, s := range c.Seeds {
			if s.Interrupted || !slices.Contains(b.res.Plan[i].Seeds, s.Seed) || b.have[runID(c.Name, s.Seed)] {
				continue
			}
			b.add(i, s)
		}
	}
	b.res.Started, b.res.DurationMs = prev.Started, prev.DurationMs
	b.res.tally()
	return nil
}

// removeTemps deletes the temporary files a kill left mid-write.
func removeTemps(dir string) {
	for _, name := range []string{JSONFile, MarkdownFile, JUnitFile, IndexFile} {
		atomicfile.RemoveTemps(filepath.Join(dir, name))
	}
}

// readResult reads a matrix.json strictly: it is untrusted input.
func readResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a matrix.json: %s", path, strings.TrimPrefix(err.Error(), "json: "))
	}
	if r.Spec == "" || len(r.Plan) == 0 {
		return nil, fmt.Errorf("%s: records no spec digest or plan (written by a torture without shards?)", path)
	}
	for _, c := range r.Cells {
		if !cellNamePattern.MatchString(c.Name) {
			return nil, fmt.Errorf("%s: cell name %q is not a cell name", path, c.Name)
		}
		for _, s := range c.Seeds {
			if s.RunID != runID(c.Name, s.Seed) {
				return nil, fmt.Errorf("%s: cell %s seed %d has run id %q, want %q", path, c.Name, s.Seed, s.RunID, runID(c.Name, s.Seed))
			}
		}
	}
	return &r, nil
}

func sameShard(a, b *Shard) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func shardText(s *Shard) string {
	if s == nil {
		return "none (the whole matrix)"
	}
	return s.String()
}
