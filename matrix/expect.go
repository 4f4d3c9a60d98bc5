package matrix

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/checker"
)

// Expect is a cell's promise: it breaks with an anomaly of a kind (and
// class), or it holds. Written `expect: holds` (the verdict is valid),
// `expect: {holds: [double-holder/within-lease, foreign-release]}` (no
// anomaly of those kinds, or of that class of a kind; others are
// tolerated), or `expect: {breaks: {kind: double-holder, class: within-lease}}`
// (also `breaks: double-holder/within-lease`). A breaking cell may add
// `first: {class: within-lease}`: the anomaly its time to first anomaly
// (and the museum's quote) is taken from, when it detects a wider one.
type Expect struct {
	// Breaks is set for a breaking cell.
	Breaks *Breaks `json:"breaks,omitempty"`
	// First, for a breaking cell, narrows the anomaly its time to first
	// anomaly and its quote are taken from (a class of Breaks' kind);
	// nil: Breaks itself.
	First *Breaks `json:"first,omitempty"`
	// Holds is true for a control cell.
	Holds bool `json:"holds,omitempty"`
	// Absent, for a control cell, narrows "holds" to "no anomaly of these
	// kinds (or classes)"; empty means the verdict must be valid.
	Absent []Pattern `json:"absent,omitempty"`
}

// Pattern names an anomaly kind and, for a kind with classes, maybe one
// class of it: "double-holder", "double-holder/within-lease". A control
// under an overrun or a pause forbids the class that means the lock failed
// while it tolerates the one every TTL lock shows.
type Pattern struct {
	Kind  checker.Kind
	Class checker.Class
}

// ParsePattern reads KIND or KIND/CLASS.
func ParsePattern(s string) (Pattern, error) {
	k, c, slash := strings.Cut(strings.TrimSpace(s), "/")
	if k == "" || (slash && c == "") || strings.Contains(c, "/") {
		return Pattern{}, fmt.Errorf("%q: want KIND or KIND/CLASS, like double-holder/within-lease", s)
	}
	return Pattern{Kind: checker.Kind(k), Class: checker.Class(c)}, nil
}

// MarshalText writes KIND or KIND/CLASS, so that matrix.json keeps a list
// of strings (and reads those written before classes).
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.spelled()), nil }

// UnmarshalText reads what MarshalText wrote.
func (p *Pattern) UnmarshalText(b []byte) error {
	v, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func (p Pattern) spelled() string {
	if p.Class == "" {
		return string(p.Kind)
	}
	return string(p.Kind) + "/" + string(p.Class)
}

// String says it as the tables do: "double-holder (within-lease)".
func (p Pattern) String() string { return Breaks{Kind: p.Kind, Class: p.Class}.String() }

// Counted reports whether rep counts an anomaly of p, listed or not.
func (p Pattern) Counted(rep *checker.Report) bool {
	if p.Class == "" {
		return rep.Count[p.Kind] > 0
	}
	return rep.Classes[p.Kind][p.Class] > 0
}

// In reports whether counts (by kind, and by kind and class) hold an
// anomaly of p: a seed's tallies in matrix.json.
func (p Pattern) In(counts map[checker.Kind]int, classes checker.ClassCounts) bool {
	if p.Class == "" {
		return counts[p.Kind] > 0
	}
	return classes[p.Kind][p.Class] > 0
}

// Matches reports whether a is an anomaly of p.
func (p Pattern) Matches(a checker.Anomaly) bool {
	return a.Kind == p.Kind && (p.Class == "" || a.Class == p.Class)
}

// Breaks is the anomaly a breaking cell must show.
type Breaks struct {
	Kind  checker.Kind  `yaml:"kind" json:"kind"`
	Class checker.Class `yaml:"class" json:"class,omitempty"`
	// Shared, when set, asks for a double holder whose two holders did
	// (true) or did not (false) share one lock object (--share K, see
	// checker.Anomaly.SharedObject): `shared: false` is a lock that let a
	// client of another object in, not two sharers overlapping by design.
	Shared *bool `yaml:"shared" json:"shared,omitempty"`
}

// kindsOf lists the anomaly kinds the registry's checkers report and the
// classes each may carry, so that a typo in a spec fails at once instead of
// making a cell never match, and a cell can expect an outside checker's kind.
func kindsOf(r *checker.Registry) map[checker.Kind][]checker.Class {
	out := map[checker.Kind][]checker.Class{}
	for _, e := range r.Entries() {
		for k, cs := range e.Kinds {
			out[k] = append(out[k], cs...)
		}
	}
	return out
}

func kindNames(kinds map[checker.Kind][]checker.Class) string {
	var out []string
	for k := range kinds {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func knownKind(kinds map[checker.Kind][]checker.Class, k checker.Kind) error {
	if _, ok := kinds[k]; !ok {
		return fmt.Errorf("unknown anomaly kind %q (known: %s)", k, kindNames(kinds))
	}
	return nil
}

// knownClass checks that kind k has class c (any when c is empty).
func knownClass(kinds map[checker.Kind][]checker.Class, k checker.Kind, c checker.Class) error {
	if err := knownKind(kinds, k); err != nil || c == "" {
		return err
	}
	classes := kinds[k]
	for _, x := range classes {
		if x == c {
			return nil
		}
	}
	if len(classes) == 0 {
		return fmt.Errorf("%s has no class %q (it has no classes)", k, c)
	}
	return fmt.Errorf("%s has no class %q (classes: %v)", k, c, classes)
}

// UnmarshalYAML reads the three written forms.
func (e *Expect) UnmarshalYAML(n *yaml.Node) error {
	*e = Expect{}
	if n.Kind == yaml.ScalarNode {
		if n.Value != "holds" {
			return fmt.Errorf("line %d: expect %q: want holds, {holds: [kinds]} or {breaks: {kind: K, class: C}}", n.Line, n.Value)
		}
		e.Holds = true
		return nil
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 4 {
		return e.decodeFirst(n)
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return fmt.Errorf("line %d: expect: want holds, {holds: [kinds]} or {breaks: {kind: K, class: C}}", n.Line)
	}
	key, val := n.Content[0], n.Content[1]
	switch key.Value {
	case "holds":
		return e.decodeHolds(val)
	case "breaks":
		if val.Kind == yaml.ScalarNode {
			p, err := ParsePattern(val.Value)
			if err != nil {
				return fmt.Errorf("line %d: expect breaks %w", val.Line, err)
			}
			e.Breaks = &Breaks{Kind: p.Kind, Class: p.Class}
			return nil
		}
		if val.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: expect breaks: want {kind: K, class: C} or K/C", val.Line)
		}
		b := &Breaks{}
		for i := 0; i+1 < len(val.Content); i += 2 {
			k, v := val.Content[i], val.Content[i+1]
			switch k.Value {
			case "kind":
				b.Kind = checker.Kind(v.Value)
			case "class":
				b.Class = checker.Class(v.Value)
			case "shared":
				var shared bool
				if err := v.Decode(&shared); err != nil {
					return fmt.Errorf("line %d: expect breaks: shared %q: want true or false", v.Line, v.Value)
				}
				b.Shared = &shared
			default:
				return fmt.Errorf("line %d: expect breaks: unknown field %q (want kind, class, shared)", k.Line, k.Value)
			}
		}
		e.Breaks = b
		return nil
	}
	return fmt.Errorf("line %d: expect: unknown field %q (want holds or breaks)", key.Line, key.Value)
}

// decodeHolds reads a control's list of kinds and kind/class patterns.
func (e *Expect) decodeHolds(val *yaml.Node) error {
	if val.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: expect holds: want a list of anomaly kinds (or kind/class)", val.Line)
	}
	e.Holds, e.Absent = true, []Pattern{}
	for _, c := range val.Content {
		if c.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: expect holds: want a list of anomaly kinds (or kind/class)", c.Line)
		}
		p, err := ParsePattern(c.Value)
		if err != nil {
			return fmt.Errorf("line %d: expect holds %w", c.Line, err)
		}
		e.Absent = append(e.Absent, p)
	}
	return nil
}

// decodeFirst reads {breaks: ..., first: ...}: a breaking cell with the
// anomaly its time to first and its quote are taken from. first's kind
// defaults to breaks'.
func (e *Expect) decodeFirst(n *yaml.Node) error {
	var first *yaml.Node
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "first" {
			first = n.Content[i+1]
		} else {
			rest.Content = append(rest.Content, n.Content[i], n.Content[i+1])
		}
	}
	if first == nil {
		return fmt.Errorf("line %d: expect: want holds, {holds: [kinds]} or {breaks: {kind: K, class: C}}", n.Line)
	}
	if rest.Content[0].Value != "breaks" {
		return fmt.Errorf("line %d: expect: want {breaks: {kind: K}, first: {class: C}} (first goes only with breaks)", n.Line)
	}
	if err := e.UnmarshalYAML(rest); err != nil {
		return err
	}
	var f Expect
	wrap := &yaml.Node{Kind: yaml.MappingNode, Line: first.Line, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "breaks", Line: first.Line}, first}}
	if err := f.UnmarshalYAML(wrap); err != nil {
		return fmt.Errorf("%s", strings.Replace(err.Error(), "expect breaks", "expect first", 1))
	}
	if f.Breaks.Kind == "" {
		f.Breaks.Kind = e.Breaks.Kind
	}
	e.First = f.Breaks
	return nil
}

func (e *Expect) validate(kinds map[checker.Kind][]checker.Class) error {
	switch {
	case e.Breaks == nil && !e.Holds:
		return errors.New("no expect: want holds or breaks")
	case e.Breaks != nil:
		if e.Breaks.Kind == "" {
			return errors.New("expect breaks names no anomaly kind")
		}
		if err := knownClass(kinds, e.Breaks.Kind, e.Breaks.Class); err != nil {
			return fmt.Errorf("expect breaks: %w", err)
		}
		if e.Breaks.Shared != nil && e.Breaks.Kind != checker.KindDoubleHolder {
			return fmt.Errorf("expect breaks: shared is said of a %s only, not of %s", checker.KindDoubleHolder, e.Breaks.Kind)
		}
		return e.validateFirst(kinds)
	default:
		for _, p := range e.Absent {
			if err := knownClass(kinds, p.Kind, p.Class); err != nil {
				return fmt.Errorf("expect holds: %w", err)
			}
		}
	}
	return nil
}

// validateFirst checks that first names an anomaly the cell detects: its
// kind, and its class when breaks names one.
func (e *Expect) validateFirst(kinds map[checker.Kind][]checker.Class) error {
	f := e.First
	if f == nil {
		return nil
	}
	if err := knownClass(kinds, f.Kind, f.Class); err != nil {
		return fmt.Errorf("expect first: %w", err)
	}
	if f.Kind != e.Breaks.Kind || (e.Breaks.Class != "" && f.Class != e.Breaks.Class) {
		return fmt.Errorf("expect first %s: want a class of what the cell breaks with, %s", f, e.Breaks)
	}
	return nil
}

// Quoted is the anomaly a breaking cell's time to first anomaly and
// quote are taken from: First, else Breaks; nil for a control.
func (e Expect) Quoted() *Breaks {
	if e.First != nil {
		return e.First
	}
	return e.Breaks
}

// String says the expectation in words: "double-holder (within-lease)",
// "holds", "holds: no double-holder".
func (e Expect) String() string {
	switch {
	case e.Breaks != nil && e.First != nil && *e.First != *e.Breaks:
		return e.Breaks.String() + ", first " + e.First.String()
	case e.Breaks != nil:
		return e.Breaks.String()
	case len(e.Absent) > 0:
		var ks []string
		for _, p := range e.Absent {
			ks = append(ks, p.String())
		}
		return "holds: no " + strings.Join(ks, ", ")
	}
	return "holds"
}

func (b Breaks) String() string {
	var in []string
	if b.Class != "" {
		in = append(in, string(b.Class))
	}
	if b.Shared != nil {
		in = append(in, map[bool]string{true: "one lock object", false: "two lock objects"}[*b.Shared])
	}
	if len(in) == 0 {
		return string(b.Kind)
	}
	return fmt.Sprintf("%s (%s)", b.Kind, strings.Join(in, ", "))
}

// counted reports whether rep counts an anomaly b asks for, listed or not
// (one that asks whether its holders shared an object is known only from
// those listed).
func (b Breaks) counted(rep *checker.Report) bool {
	if b.Shared != nil {
		return false
	}
	if b.Class == "" {
		return rep.Count[b.Kind] > 0
	}
	return rep.Classes[b.Kind][b.Class] > 0
}

// Matches reports whether a is the anomaly b asks for.
func (b Breaks) Matches(a checker.Anomaly) bool { return b.matches(a) }

// matches reports whether a is the anomaly b asks for.
func (b Breaks) matches(a checker.Anomaly) bool {
	return a.Kind == b.Kind && (b.Class == "" || a.Class == b.Class) &&
		(b.Shared == nil || a.SharedObject != nil && *a.SharedObject == *b.Shared)
}
