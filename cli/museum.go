package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/museum"
)

// cmdMuseum builds and runs the exhibits of a museum folder (bugs/ by
// default) and writes the museum's page over their matrices. Exit 0 when
// every exhibit went as expected, 1 when some did not, 2 when some could
// not be shown (it did not build, its library version is not here) or the
// museum was interrupted; the others still run.
func cmdMuseum(args []string, stdout, stderr io.Writer) int {
	var out, exhibits, seeds string
	var quiet bool
	fs := newFlags("museum", stderr)
	fs.StringVar(&out, "out", "", "folder for the museum: index.html, museum.json, museum.md and a folder per exhibit (default results/museum-TIME)")
	fs.StringVar(&exhibits, "exhibits", "", "run only these comma-separated exhibits (their folder names)")
	fs.StringVar(&seeds, "seeds", "", "seeds A..B (or one seed) for every exhibit's cells, replacing their specs'")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	dirs, help, err := parsePositional(fs, args, stdout, "usage: torture museum [flags] [BUGS_DIR]")
	if code, stop := parseStop(help, err, "museum", stderr); stop {
		return code
	}
	dir := "bugs"
	switch len(dirs) {
	case 0:
	case 1:
		dir = dirs[0]
	default:
		return fail(stderr, fmt.Errorf("museum: want at most one museum folder, got %d", len(dirs)))
	}
	if seeds != "" {
		if _, err := matrix.ParseSeeds(seeds); err != nil {
			return fail(stderr, fmt.Errorf("museum: --%v", err))
		}
	}
	if out == "" {
		out = filepath.Join("results", "museum-"+time.Now().Format("20060102-150405"))
	}
	o := museum.Options{Dir: dir, Out: out, Seeds: seeds}
	if exhibits != "" {
		o.Exhibits = strings.Split(exhibits, ",")
	}
	if !quiet {
		o.Progress = stdout
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fmt.Fprintf(stdout, "torture museum %s: output in %s\n", dir, out)
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
	fmt.Fprintf(stdout, "museum page: %s\n", filepath.Join(out, museum.PageFile))
	return res.Code()
}
