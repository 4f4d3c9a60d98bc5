// Package matrix runs specs of lock x fault x parameters x seeds, each cell
// with the outcome it is expected to have, and says which cells kept their
// promise. It is the README's fault and lock tables as data: a team gating a
// lock library runs the matrix and gets one exit code, a JSON summary, a
// Markdown table and JUnit test cases.
package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture"
)

// Spec is a matrix file: defaults shared by every cell, then the cells.
type Spec struct {
	// Name labels the matrix in its outputs; default the file's base name.
	Name string `yaml:"name"`
	// Seeds every cell runs with unless the cell or --seeds says otherwise.
	Seeds Seeds `yaml:"seeds"`
	// MinRate is the share of seeds in which a breaking cell must find its
	// anomaly to count as expected (default 1: every seed).
	MinRate  *float64 `yaml:"min-rate"`
	Defaults Params   `yaml:"defaults"`
	Cells    []Cell   `yaml:"cells"`

	// regs are the registries the spec was checked against; its runs draw
	// on them.
	regs locktorture.Registries
	// Digest is the SHA-256 of the spec's bytes: shards and resumed runs
	// of a matrix prove with it that they ran the same spec.
	Digest string `yaml:"-"`
}

// Cell is one lock under a set of faults with its expected outcome. Its
// parameters override the spec's defaults field by field.
type Cell struct {
	// Name is the cell's id in outputs and run folders; default
	// LOCK-FAULT_FAULT, with overrun and abandon as faults (or LOCK-none).
	Name   string   `yaml:"name"`
	Lock   string   `yaml:"lock"`
	Faults []string `yaml:"faults"`
	Seeds  Seeds    `yaml:"seeds"`
	Expect Expect   `yaml:"expect"`
	// Side says which program or setting the cell runs, for the museum's
	// table: buggy, fixed, or the setting a control changes, in words.
	// The matrix only carries it into its result.
	Side string `yaml:"side"`
	// Note says why the cell exists (the README claim it checks).
	Note   string `yaml:"note"`
	Params `yaml:",inline"`

	// opts are the cell's run options, resolved against the spec's
	// registries when the spec was read.
	opts locktorture.Options
}

// Params are the run settings a spec sets, by their flag names (clients,
// ttl, hold, latency, ...): every setting of the registries in use that a
// spec may set (locktorture.SpecKey), the entries' own among them. A cell's
// value wins over the defaults', the defaults' over locktorture's own.
type Params map[string]Param

// Param is one setting's value as written: a scalar, or a list of scalars
// (checkers: [a, b]) read as their comma-separated text, and the line it
// is on, for errors.
type Param struct {
	Text string
	Line int
}

// UnmarshalYAML takes a scalar or a sequence of scalars.
func (p *Param) UnmarshalYAML(n *yaml.Node) error {
	p.Line = n.Line
	switch n.Kind {
	case yaml.ScalarNode:
		p.Text = n.Value
		return nil
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want a list of plain values", c.Line)
			}
			parts = append(parts, c.Value)
		}
		p.Text = strings.Join(parts, ",")
		return nil
	}
	return fmt.Errorf("line %d: want a value or a list of values", n.Line)
}

// Seeds is a list of seeds, written "1..20", "3" or [1, 5, 9].
type Seeds []int64

// UnmarshalYAML accepts a range string, a single number or a list.
func (s *Seeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var list []int64
		if err := n.Decode(&list); err != nil {
			return fmt.Errorf("line %d: seeds: want integers", n.Line)
		}
		*s = list
		return nil
	}
	v, err := ParseSeeds(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = v
	return nil
}

// maxSeeds bounds a seed range, so a typo cannot schedule a year of runs.
const maxSeeds = 10000

// ParseSeeds parses "A..B" (inclusive) or a single seed, as --seeds takes.
func ParseSeeds(text string) (Seeds, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(text), "..")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseInt(lo, 10, 64)
	b, err2 := strconv.ParseInt(hi, 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return nil, fmt.Errorf("seeds %q: want A..B or one integer", text)
	case b < a:
		return nil, fmt.Errorf("seeds %q: the range is empty", text)
	case b-a >= maxSeeds:
		return nil, fmt.Errorf("seeds %q: more than %d seeds", text, maxSeeds)
	}
	var out Seeds
	for v := a; v <= b; v++ {
		out = append(out, v)
	}
	return out, nil
}

// Load reads a spec file and checks it against regs (zero: the built-ins).
func Load(path string, regs locktorture.Registries) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(baseName(path), ".yaml"), ".yml")
	return Parse(bytes.NewReader(b), name, regs)
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Parse decodes a spec strictly and checks every cell against regs (zero:
// the built-ins): its lock, faults, settings and expected anomaly kind must
// be ones the registries have, so that a mistake shows before the first run
// rather than an hour into the matrix. name is the default Spec.Name.
func Parse(r io.Reader, name string, regs locktorture.Registries) (*Spec, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("spec is empty")
		}
		return nil, fmt.Errorf("spec: %s", oneLine(err.Error()))
	}
	if s.Name == "" {
		s.Name = name
	}
	regs.Fill()
	s.regs = regs
	s.Digest = digest(b)
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func oneLine(s string) string {
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:")
	return strings.Join(strings.Fields(s), " ")
}

var cellNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (s *Spec) validate() error {
	if len(s.Cells) == 0 {
		return errors.New("spec has no cells")
	}
	if s.MinRate != nil && (*s.MinRate <= 0 || *s.MinRate > 1) {
		return fmt.Errorf("min-rate %v: want a share in (0, 1]", *s.MinRate)
	}
	all, err := s.regs.Settings()
	if err != nil {
		return err
	}
	if err := checkParams(all, s.Defaults); err != nil {
		return fmt.Errorf("defaults: %w", err)
	}
	if _, err := (&Cell{}).options(s.Defaults, s.regs); err != nil {
		return fmt.Errorf("defaults: %s", oneLine(err.Error()))
	}
	kinds := kindsOf(s.regs.Checkers)
	seen := map[string]int{}
	for i := range s.Cells {
		c := &s.Cells[i]
		early := fmt.Sprintf("cell %d", i+1)
		if c.Name != "" {
			early += " (" + c.Name + ")"
		}
		if err := checkParams(all, c.Params); err != nil {
			return fmt.Errorf("%s: %w", early, err)
		}
		o, err := c.options(s.Defaults, s.regs)
		if err != nil {
			return fmt.Errorf("%s: %s", early, oneLine(err.Error()))
		}
		c.opts = o
		if c.Name == "" {
			c.Name = c.Lock + "-" + strings.ReplaceAll(c.faultLabel(), "+", "_")
		}
		label := fmt.Sprintf("cell %d (%s)", i+1, c.Name)
		if !cellNamePattern.MatchString(c.Name) {
			return fmt.Errorf("%s: name %q: use letters, digits, '.', '_' and '-'", label, c.Name)
		}
		if j, dup := seen[c.Name]; dup {
			return fmt.Errorf("%s: same name as cell %d; give one a name:", label, j+1)
		}
		seen[c.Name] = i
		if c.Lock == "" {
			return fmt.Errorf("%s: no lock", label)
		}
		if err := c.Expect.validate(kinds); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if err := c.opts.WithDefaults().Validate(); err != nil {
			return fmt.Errorf("%s: %s", label, oneLine(err.Error()))
		}
	}
	return nil
}

// SeedsFor returns the seeds cell c runs with: override (from --seeds)
// first, then the cell's, then the spec's, then seed 1.
func (s *Spec) SeedsFor(c *Cell, override Seeds) Seeds {
	switch {
	case len(override) > 0:
		return override
	case len(c.Seeds) > 0:
		return c.Seeds
	case len(s.Seeds) > 0:
		return s.Seeds
	}
	return Seeds{1}
}

// Rate is the spec's min-rate, default 1.
func (s *Spec) Rate() float64 {
	if s.MinRate == nil {
		return 1
	}
	return *s.MinRate
}
