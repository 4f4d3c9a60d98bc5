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
// `expect: {holds: [double-holder]}` (no anomaly of those kinds; others
// are tolerated), or `expect: {breaks: {kind: double-holder, class: within-lease}}`.
type Expect struct {
	// Breaks is set for a breaking cell.
	Breaks *Breaks `json:"breaks,omitempty"`
	// Holds is true for a control cell.
	Holds bool `json:"holds,omitempty"`
	// Absent, for a control cell, narrows "holds" to "no anomaly of these
	// kinds"; empty means the verdict must be valid.
	Absent []checker.Kind `json:"absent,omitempty"`
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
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return fmt.Errorf("line %d: expect: want holds, {holds: [kinds]} or {breaks: {kind: K, class: C}}", n.Line)
	}
	key, val := n.Content[0], n.Content[1]
	switch key.Value {
	case "holds":
		var kinds []checker.Kind
		if val.Kind != yaml.SequenceNode || val.Decode(&kinds) != nil {
			return fmt.Errorf("line %d: expect holds: want a list of anomaly kinds", val.Line)
		}
		e.Holds, e.Absent = true, kinds
		return nil
	case "breaks":
		if val.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: expect breaks: want {kind: K, class: C}", val.Line)
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

func (e *Expect) validate(kinds map[checker.Kind][]checker.Class) error {
	switch {
	case e.Breaks == nil && !e.Holds:
		return errors.New("no expect: want holds or breaks")
	case e.Breaks != nil:
		if e.Breaks.Kind == "" {
			return errors.New("expect breaks names no anomaly kind")
		}
		if err := knownKind(kinds, e.Breaks.Kind); err != nil {
			return fmt.Errorf("expect breaks: %w", err)
		}
		if e.Breaks.Shared != nil && e.Breaks.Kind != checker.KindDoubleHolder {
			return fmt.Errorf("expect breaks: shared is said of a %s only, not of %s", checker.KindDoubleHolder, e.Breaks.Kind)
		}
		if c := e.Breaks.Class; c != "" {
			classes := kinds[e.Breaks.Kind]
			for _, k := range classes {
				if k == c {
					return nil
				}
			}
			return fmt.Errorf("expect breaks: %s has no class %q (classes: %v)", e.Breaks.Kind, c, classes)
		}
	default:
		for _, k := range e.Absent {
			if err := knownKind(kinds, k); err != nil {
				return fmt.Errorf("expect holds: %w", err)
			}
		}
	}
	return nil
}

// String says the expectation in words: "double-holder (within-lease)",
// "holds", "holds: no double-holder".
func (e Expect) String() string {
	switch {
	case e.Breaks != nil:
		return e.Breaks.String()
	case len(e.Absent) > 0:
		var ks []string
		for _, k := range e.Absent {
			ks = append(ks, string(k))
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

// matches reports whether a is the anomaly b asks for.
func (b Breaks) matches(a checker.Anomaly) bool {
	return a.Kind == b.Kind && (b.Class == "" || a.Class == b.Class) &&
		(b.Shared == nil || a.SharedObject != nil && *a.SharedObject == *b.Shared)
}
