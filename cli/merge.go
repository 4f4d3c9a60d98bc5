package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/locktorture/locktorture/matrix"
)

// cmdMerge puts the shards of a matrix back together: one matrix.json,
// matrix.md, junit.xml and index.html over all of them, with their run
// folders, as one unsharded run would have written. Exit codes as for a
// matrix; 2 also when the shards cannot be merged.
func cmdMerge(args []string, stdout, stderr io.Writer) int {
	var out string
	fs := newFlags("matrix merge", stderr)
	fs.StringVar(&out, "out", "", "folder for the merged matrix files and runs/ (required)")
	dirs, help, err := parsePositional(fs, args, stdout, "usage: torture matrix merge --out DIR SHARD_DIR...")
	if code, stop := parseStop(help, err, "matrix merge", stderr); stop {
		return code
	}
	if out == "" {
		return fail(stderr, errors.New("matrix merge: --out DIR is required"))
	}
	res, err := matrix.Merge(dirs, out)
	if err != nil {
		return fail(stderr, fmt.Errorf("matrix merge: %v", err))
	}
	fmt.Fprintf(stdout, "torture matrix merge: %d shard folders, %d runs of %s, output in %s\n", len(dirs), res.Runs, res.Name, out)
	return finish(res, out, stdout, stderr)
}
