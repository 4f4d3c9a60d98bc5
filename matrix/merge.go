package matrix

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Merge puts the outputs of a matrix's shards (each a folder with its
// matrix.json and runs/) back together into one result, as one unsharded
// run of the same spec and seeds would have written it, and links (or
// copies) every run folder into out/runs/ so the merged pages reach them.
// The shards must be of one spec, one build and one plan, and together hold
// every planned run exactly once; anything else is an error naming the
// first problem, and nothing is written.
func Merge(dirs []string, out string) (*Result, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no shard folders to merge")
	}
	parts, err := readShards(dirs, out)
	if err != nil {
		return nil, err
	}
	first := parts[0]
	for _, p := range parts[1:] {
		if why := first.res.Identity.differs(p.res.Identity, first.dir, p.dir); why != "" {
			return nil, errors.New(why)
		}
	}
	if err := checkShards(parts); err != nil {
		return nil, err
	}
	res, from, err := gather(parts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("make merged folder: %w", err)
	}
	for i := range res.Cells {
		if sh := res.Cells[i].Shrunk; sh != nil && sh.Dir != "" {
			id := runID(res.Cells[i].Name, sh.Seed)
			if err := bringShrink(sh, id, from[id], out); err != nil {
				return nil, err
			}
		}
		for j := range res.Cells[i].Seeds {
			s := &res.Cells[i].Seeds[j]
			src := filepath.Join(from[s.RunID], "runs", s.RunID)
			s.Dir = ""
			if _, err := os.Stat(src); err != nil {
				continue // a run that failed before it had a folder
			}
			dst := filepath.Join(out, "runs", s.RunID)
			if err := linkTree(src, dst); err != nil {
				return nil, fmt.Errorf("bring run %s into %s: %w", s.RunID, out, err)
			}
			s.Dir = runDir(out, dst)
		}
	}
	return res, nil
}

type shardPart struct {
	dir string
	res *Result
}

// readShards reads every folder's matrix.json, refusing a folder given
// twice and the output folder among the inputs.
func readShards(dirs []string, out string) ([]shardPart, error) {
	outAbs, _ := filepath.Abs(out)
	seen := map[string]string{}
	var parts []shardPart
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("shard folder %s: %w", d, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if prev, dup := seen[abs]; dup {
			return nil, fmt.Errorf("shard folder %s given twice (as %s and %s)", abs, prev, d)
		}
		seen[abs] = d
		if abs == outAbs {
			return nil, fmt.Errorf("--out %s is one of the shard folders; merge into a new folder", out)
		}
		r, err := readResult(filepath.Join(d, JSONFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s: not the output of a matrix shard", d, JSONFile)
		} else if err != nil {
			return nil, err
		}
		parts = append(parts, shardPart{dir: d, res: r})
	}
	return parts, nil
}

// checkShards names a shard given twice or missing, when the parts are
// shards of one N.
func checkShards(parts []shardPart) error {
	byK := map[int]string{}
	n := 0
	for _, p := range parts {
		s := p.res.Shard
		if s == nil {
			continue
		}
		if n != 0 && s.N != n {
			return fmt.Errorf("%s is shard %s but another folder is a shard of %d", p.dir, s, n)
		}
		n = s.N
		if prev, dup := byK[s.K]; dup {
			return fmt.Errorf("shard %s given twice: %s and %s", s, prev, p.dir)
		}
		byK[s.K] = p.dir
	}
	if len(byK) == len(parts) {
		for k := 1; k <= n; k++ {
			if _, ok := byK[k]; !ok {
				return fmt.Errorf("shard %d/%d missing: give its folder too", k, n)
			}
		}
	}
	return nil
}

// gather builds the merged result: every planned run exactly once, cells
// and seeds in plan order. from maps each run id to the folder it came from.
func gather(parts []shardPart) (*Result, map[string]string, error) {
	first := parts[0].res
	res := &Result{Name: first.Name, MinRate: first.MinRate, Started: first.Started, Identity: first.Identity}
	from := map[string]string{}
	type found struct {
		cell CellResult
		seed SeedResult
	}
	runs := map[string]found{}
	for _, p := range parts {
		r := p.res
		if r.Started.Before(res.Started) {
			res.Started = r.Started
		}
		// Shards run side by side: the merged matrix took as long as its
		// slowest shard.
		res.DurationMs = max(res.DurationMs, r.DurationMs)
		for _, c := range r.Cells {
			for _, s := range c.Seeds {
				if s.Interrupted {
					continue // missing, unless another part has it
				}
				if prev, dup := from[s.RunID]; dup {
					return nil, nil, fmt.Errorf("run %s is in %s and in %s", s.RunID, prev, p.dir)
				}
				from[s.RunID] = p.dir
				runs[s.RunID] = found{c, s}
			}
		}
	}
	var missing []string
	for _, pc := range first.Plan {
		var cr *CellResult
		for _, seed := range pc.Seeds {
			id := runID(pc.Name, seed)
			f, ok := runs[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			delete(runs, id)
			if cr == nil {
				c := f.cell
				c.Seeds = []SeedResult{}
				res.Cells = append(res.Cells, c)
				cr = &res.Cells[len(res.Cells)-1]
			}
			cr.Seeds = append(cr.Seeds, f.seed)
			res.Runs++
		}
		if cr != nil {
			cr.summarise(res.MinRate)
		}
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(missing)-1)
		}
		return nil, nil, fmt.Errorf("run %s missing from the shards%s: rerun its shard with --resume", missing[0], more)
	}
	for id := range runs {
		return nil, nil, fmt.Errorf("run %s (in %s) is not in the plan", id, from[id])
	}
	res.tally()
	return res, from, nil
}

// bringShrink links the shrink folder of a cell's failing seed into out,
// where the merged files point.
func bringShrink(sh *Shrunk, id, shard, out string) error {
	src := filepath.Join(shard, ShrinkDir, id)
	if _, err := os.Stat(src); err != nil {
		sh.Dir = ""
		return nil
	}
	dst := filepath.Join(out, ShrinkDir, id)
	if err := linkTree(src, dst); err != nil {
		return fmt.Errorf("bring shrink %s into %s: %w", id, out, err)
	}
	sh.Dir = runDir(out, dst)
	return nil
}

// linkTree makes dst a copy of the folder src: hard links where the file
// system allows (runs are never written again once done), copies elsewhere.
func linkTree(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil // a run folder holds plain files only
		}
		if os.Link(path, to) == nil {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
