package hunt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/settings"
)

// entryValues are the values the hunt tries for a setting an entry (a
// fault, a workload) declares: its own Search, else values its kind
// suggests, durations as multiples of the TTL, so a fault written
// tomorrow with a duration knob is searched around the lease it attacks.
// The base value, first, is "": the entry's own default.
func entryValues(s settings.Setting) []string {
	if s.NoSearch {
		return nil
	}
	if len(s.Search) > 0 {
		return s.Search
	}
	return SearchKind(s)
}

// SearchKind is what a setting of its kind is searched over when it
// declares no values of its own: its default first (""), then values
// that stress a lease: fractions and multiples of the TTL for durations,
// small and large rates, few and many for counts, every choice.
func SearchKind(s settings.Setting) []string {
	switch s.Kind {
	case settings.Bool:
		return []string{"", "true", "false"}
	case settings.String:
		if len(s.Choices) == 0 {
			return nil // free text: nothing to guess
		}
		return append([]string{""}, s.Choices...)
	case settings.Duration:
		return []string{"", "0.1ttl", "0.5ttl", "1.5ttl", "3ttl"}
	case settings.Range:
		return []string{"", "0.02ttl..0.1ttl", "0.5ttl..1ttl", "2ttl..3ttl"}
	case settings.Float:
		return []string{"", "0.05", "0.2", "0.5"}
	case settings.Int:
		return []string{"", "1", "2", "4"}
	}
	return nil
}

var relTTL = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)ttl`)

// Resolve turns a value text of the hunt into the text the setting parses:
// each "<n>ttl" becomes n times ttl, rounded to the millisecond (at least
// 1ms).
func Resolve(text string, ttl time.Duration) string {
	if !strings.Contains(text, "ttl") {
		return text
	}
	return relTTL.ReplaceAllStringFunc(text, func(m string) string {
		f, err := strconv.ParseFloat(strings.TrimSuffix(m, "ttl"), 64)
		if err != nil {
			return m
		}
		d := time.Duration(f * float64(ttl)).Round(time.Millisecond)
		if d < time.Millisecond && f > 0 {
			d = time.Millisecond
		}
		return d.String()
	})
}

// checkValues refuses a declaration whose search values do not parse:
// found when the space is made, not after a run was spent on it.
func checkValues(d Dim) error {
	for _, v := range d.Values {
		if v == "" {
			continue
		}
		if _, err := d.Setting.Parse(Resolve(v, time.Second)); err != nil {
			return fmt.Errorf("setting %s: search value %q: %w", d.Name(), v, err)
		}
	}
	return nil
}
