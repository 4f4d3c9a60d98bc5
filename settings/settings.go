// Package settings declares the knobs of a run once. A Setting is one named,
// typed knob with its help and default; from the declarations come the
// torture command's flags, the keys a matrix spec may set, the parameters a
// run's history header records (and so its replay command) and the README's
// flag table. A run's own settings are declared by package locktorture; a
// lock, fault or workload entry declares the settings it alone reads, the way
// each toxiproxy toxic owns its attributes, so an entry written in another
// module gets its flag and its spec key without touching this repository.
package settings

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kind is how a setting's text is read.
type Kind string

// The kinds of setting.
const (
	Duration Kind = "duration" // a Go duration: 300ms, 2s
	Int      Kind = "int"
	Float    Kind = "float"
	Bool     Kind = "bool"
	String   Kind = "string"
	// Range is MIN..MAX durations (or one duration for both).
	Range Kind = "range"
	// List is comma-separated names.
	List Kind = "list"
)

// Setting is one knob: --Name on the command line, Name: in a spec.
type Setting struct {
	Name string
	// Help is the one line of the flag's help and the README's table.
	Help string
	Kind Kind
	// Default is what an unset setting means, in words or as a value
	// ("the TTL", "1s"); empty for none.
	Default string
	// Choices, when set, are the only texts a String setting takes.
	Choices []string
	// Owner names who declared it: "run" for a run's own settings, else
	// "fault latency", "lock redlock", ...
	Owner string
	// Aliases are older spellings of Name, still accepted as flags and
	// header params; their help says which setting is meant.
	Aliases []string
	// Search lists the values `torture hunt` tries for the setting, the
	// first its base value, each a text Parse reads; in a Duration or
	// Range text a number followed by "ttl" is that multiple of the run's
	// TTL ("0.5ttl", "1.5ttl..2.5ttl"). Empty: an entry's setting gets
	// values derived from its kind (SearchKind), a run's own setting is
	// not searched. NoSearch keeps a setting out of the hunt altogether.
	Search   []string
	NoSearch bool
}

// Span is the value of a Range setting.
type Span struct{ Min, Max time.Duration }

func (s Span) String() string { return s.Min.String() + ".." + s.Max.String() }

// Parse reads text as the setting's kind. Its errors say what was wanted,
// not which setting: callers name it (--name, or a spec key).
func (s Setting) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	switch s.Kind {
	case Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return nil, fmt.Errorf("want a duration like 300ms or 2s, got %q", text)
		}
		if d < 0 {
			return nil, fmt.Errorf("want a duration of 0 or more, got negative %q", text)
		}
		return d, nil
	case Int:
		n, err := strconv.Atoi(text)
		return parsed(n, err, "an integer", text)
	case Float:
		f, err := strconv.ParseFloat(text, 64)
		return parsed(f, err, "a number", text)
	case Bool:
		b, err := strconv.ParseBool(text)
		return parsed(b, err, "true or false", text)
	case Range:
		return parseSpan(text)
	case List:
		return SplitList(text), nil
	case String:
		if len(s.Choices) > 0 && !contains(s.Choices, text) {
			return nil, fmt.Errorf("want %s, got %q", strings.Join(s.Choices, ", "), text)
		}
		return text, nil
	}
	return nil, fmt.Errorf("setting %s has no kind", s.Name)
}

// Format writes v back as text that Parse reads.
func (s Setting) Format(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []string:
		return strings.Join(x, ",")
	case time.Duration:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// Accepts reports whether v has the Go type of the setting's kind, for
// values given through the Go API rather than as text.
func (s Setting) Accepts(v any) bool {
	switch v.(type) {
	case time.Duration:
		return s.Kind == Duration
	case int:
		return s.Kind == Int
	case float64:
		return s.Kind == Float
	case bool:
		return s.Kind == Bool
	case string:
		return s.Kind == String && (len(s.Choices) == 0 || contains(s.Choices, v.(string)))
	case Span:
		return s.Kind == Range
	case []string:
		return s.Kind == List
	}
	return false
}

func parseSpan(text string) (Span, error) {
	lo, hi, found := strings.Cut(text, "..")
	if !found {
		hi = lo
	}
	a, err1 := time.ParseDuration(strings.TrimSpace(lo))
	b, err2 := time.ParseDuration(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return Span{}, fmt.Errorf("want MIN..MAX durations like 10ms..100ms, got %q", text)
	}
	return Span{a, b}, nil
}

// parsed is what strconv made of text, or, when it could not, an error
// saying what was wanted rather than strconv's own wording.
func parsed[T any](v T, err error, want, text string) (any, error) {
	if err != nil {
		return nil, fmt.Errorf("want %s, got %q", want, text)
	}
	return v, nil
}

// SplitList splits comma-separated names, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Values are settings' values by name, each of its kind's Go type
// (time.Duration, int, float64, bool, string, Span, []string). What an
// entry is built with: its own settings and the run's, unset ones absent.
type Values map[string]any

// Duration is the named duration, 0 when unset.
func (v Values) Duration(name string) time.Duration { d, _ := v[name].(time.Duration); return d }

// Int is the named integer, 0 when unset.
func (v Values) Int(name string) int { n, _ := v[name].(int); return n }

// Float is the named number, 0 when unset.
func (v Values) Float(name string) float64 { f, _ := v[name].(float64); return f }

// Bool is the named flag, false when unset.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// String is the named text, "" when unset.
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Set is a collection of declarations with unique names. The same name
// declared twice must mean the same kind (three network faults share
// "direction"); its first help is kept.
type Set struct {
	list []Setting
	by   map[string]int
}

// Add declares settings, refusing a name declared before with another kind.
func (s *Set) Add(decls ...Setting) error {
	if s.by == nil {
		s.by = map[string]int{}
	}
	for _, d := range decls {
		if d.Name == "" || strings.ContainsAny(d.Name, " ,=\t") {
			return fmt.Errorf("setting %q of %s: want a name without spaces, commas or '='", d.Name, d.Owner)
		}
		if i, ok := s.by[d.Name]; ok {
			prev := &s.list[i]
			if prev.Name != d.Name {
				return fmt.Errorf("setting %q of %s: the name is an older spelling of %q", d.Name, d.Owner, prev.Name)
			}
			if prev.Kind != d.Kind {
				return fmt.Errorf("setting %q: %s declares it a %s, %s a %s", d.Name, prev.Owner, prev.Kind, d.Owner, d.Kind)
			}
			// "fault latency" and "fault partition" read it: "fault latency, partition".
			word, name, _ := strings.Cut(d.Owner, " ")
			if strings.HasPrefix(prev.Owner, word+" ") && name != "" {
				prev.Owner += ", " + name
			} else if d.Owner != prev.Owner {
				prev.Owner += ", " + d.Owner
			}
			continue
		}
		s.by[d.Name] = len(s.list)
		for _, a := range d.Aliases {
			if _, taken := s.by[a]; taken {
				return fmt.Errorf("setting %q: its alias %q names another setting", d.Name, a)
			}
			s.by[a] = len(s.list)
		}
		s.list = append(s.list, d)
	}
	return nil
}

// Lookup returns the setting called name, or whose alias name is.
func (s *Set) Lookup(name string) (Setting, bool) {
	i, ok := s.by[name]
	if !ok {
		return Setting{}, false
	}
	return s.list[i], true
}

// All lists the settings in the order they were declared.
func (s *Set) All() []Setting { return append([]Setting(nil), s.list...) }

// Names lists the setting names, sorted.
func (s *Set) Names() []string {
	out := make([]string, len(s.list))
	for i, d := range s.list {
		out[i] = d.Name
	}
	sort.Strings(out)
	return out
}

// Unknown is the error for a name no declaration has, with the nearest
// known names: those that share its first word or are two edits from it.
func (s *Set) Unknown(name string) error {
	var near []string
	head, _, _ := strings.Cut(name, "-")
	for _, n := range s.Names() {
		if strings.HasPrefix(n, head) || distance(n, name) <= 2 {
			near = append(near, n)
		}
	}
	if len(near) > 0 {
		return fmt.Errorf("unknown setting %q (did you mean %s?)", name, strings.Join(near, ", "))
	}
	return fmt.Errorf("unknown setting %q (see torture run -h)", name)
}

// distance is the edit distance of a and b (insertions, deletions,
// substitutions), for suggesting a name to a typo.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
