package checker

import (
	"fmt"
	"sort"
	"strings"
)

// ClassCounts counts anomalies by kind, then class: how many of the double
// holders were the lock's fault (within-lease) and how many the holder's
// (lease-outlived). Like Count it covers every anomaly found, listed or not.
type ClassCounts map[Kind]map[Class]int

func (cc ClassCounts) add(k Kind, c Class, n int) {
	if c == "" || n == 0 {
		return
	}
	if cc[k] == nil {
		cc[k] = map[Class]int{}
	}
	cc[k][c] += n
}

// CountText says counts in one line, each kind with its classes:
// "double-holder 356 (lease-outlived 328, within-lease 28), foreign-release 3".
// Kinds and classes are in name order, so the line is the same for the same
// counts; empty when there are none.
func CountText(count map[Kind]int, classes ClassCounts) string {
	kinds := make([]string, 0, len(count))
	for k, n := range count {
		if n > 0 {
			kinds = append(kinds, string(k))
		}
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, count[Kind(k)])
		if cs := ClassText(classes[Kind(k)]); cs != "" {
			parts[i] += " (" + cs + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// ClassText says one kind's class counts: "lease-outlived 328, within-lease 28".
func ClassText(cs map[Class]int) string {
	names := make([]string, 0, len(cs))
	for c, n := range cs {
		if n > 0 {
			names = append(names, string(c))
		}
	}
	sort.Strings(names)
	for i, c := range names {
		names[i] = fmt.Sprintf("%s %d", c, cs[Class(c)])
	}
	return strings.Join(names, ", ")
}
