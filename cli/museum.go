package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/museum"
)

// cmdMuseum builds and runs the exhibits of a museum folder (bugs/ by
// default) and writes the museum's page over their matrices. Exit 0 when
// every exhibit went as expected, 1 when some did not, 2 when some could
// not be shown (it did not build, its library version is not here) or the
// museum was interrupted; the others still run.
func cmdMuseum(args []string, stdout, stderr io.Writer) int {
	o, quiet, code, stop := museumOptions(args, stdout, stderr)
	if stop {
		return code
	}
	if !quiet {
		o.Progress = stdout
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fmt.Fprintf(stdout, "torture museum %s: output in %s\n", o.Dir, o.Out)
	res, err := museum.Run(ctx, o)
	if err != nil {
		return fail(stderr, fmt.Errorf("museum: %v", err))
	}
	for _, x := range res.Exhibits {
		if x.Error != "" {
			fmt.Fprintf(stderr, "torture: museum: %s\n", x.Error)
		}
	}
	fmt.Fprintln(stdout, res.Closing())
	fmt.Fprintf(stdout, "museum page: %s\n", filepath.Join(o.Out, museum.PageFile))
	return res.Code()
}

// museumOptions parses the museum's flags: its own, and those of `torture
// matrix` it passes on to every exhibit's matrix (--seeds, --cells,
// --full-runs, --shrink, --shrink-budget). stop is set, with the exit
// code, for help or a bad flag.
func museumOptions(args []string, stdout, stderr io.Writer) (o museum.Options, quiet bool, code int, stop bool) {
	var out, exhibits string
	var mf matrixRunFlags
	fs := newFlags("museum", stderr)
	fs.StringVar(&out, "out", "", "folder for the museum: index.html, museum.json, museum.md and a folder per exhibit (default results/museum-TIME)")
	fs.StringVar(&exhibits, "exhibits", "", "run only these comma-separated exhibits (their folder names)")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	mf.define(fs)
	dirs, help, err := parsePositional(fs, args, stdout, "usage: torture museum [flags] [BUGS_DIR]")
	if code, stop := parseStop(help, err, "museum", stderr); stop {
		return o, quiet, code, true
	}
	o.Dir = "bugs"
	switch len(dirs) {
	case 0:
	case 1:
		o.Dir = dirs[0]
	default:
		return o, quiet, fail(stderr, fmt.Errorf("museum: want at most one museum folder, got %d", len(dirs))), true
	}
	if _, err := mf.parsedSeeds(); err != nil {
		return o, quiet, fail(stderr, fmt.Errorf("museum: %v", err)), true
	}
	if _, err := path.Match(mf.cells, ""); err != nil {
		return o, quiet, fail(stderr, fmt.Errorf("museum: --cells %q: bad pattern", mf.cells)), true
	}
	if out == "" {
		out = filepath.Join("results", "museum-"+time.Now().Format("20060102-150405"))
	}
	o.Out, o.Seeds, o.Matrix = out, mf.seeds, mf.args()
	if exhibits != "" {
		o.Exhibits = strings.Split(exhibits, ",")
	}
	return o, quiet, 0, false
}
