package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/locktorture/locktorture/checker"
)

// perKind bounds the anomalies printed of each kind; summary.json has them all.
const perKind = 3

// printReport prints the verdict and the first anomalies of each kind, then
// the counts by kind and class of every anomaly found (listed or not), the
// same figures summary.json and report.html give; details names the file
// that has them all, if one was written.
func printReport(w io.Writer, r *checker.Report, details string) {
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict)))
	for _, res := range r.Results {
		if res.Verdict == checker.Unknown {
			fmt.Fprintf(w, "  %s: unknown (%s)\n", res.Checker, res.Error)
		}
	}
	shown := map[checker.Kind]int{}
	for _, a := range r.Anomalies {
		if shown[a.Kind] == perKind {
			continue
		}
		shown[a.Kind]++
		kind := string(a.Kind)
		if a.Class != "" {
			kind += " (" + string(a.Class) + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", kind, a.Detail)
	}
	if counts := checker.CountText(r.Count, r.Classes); counts != "" {
		if details != "" {
			details = " (details in " + details + ")"
		}
		fmt.Fprintf(w, "anomalies: %s%s\n", counts, details)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, u := range r.Untested {
		fmt.Fprintf(w, "not tested: %s\n", u)
	}
}
