// Package registry is the one shape shared by locktorture's five extension
// points: locks, faults, topologies, workloads and checkers. Each package
// declares its own Entry type (a name, a one-line summary, a constructor, and
// whatever that kind of entry must declare: a lock's node count, a workload's
// checkers) and keeps its entries in a Registry of that type. The built-ins
// are registered through the same Register call an outside module uses, so a
// lock, fault, workload, topology or checker written elsewhere is one value and
// one call away from every run, `torture list` and the matrix.
package registry

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Entry is what every registered extension says about itself.
type Entry interface {
	// About returns the entry's name (what flags and specs call it) and the
	// one line `torture list` prints for it.
	About() (name, summary string)
	// Check reports an entry that cannot work (no constructor, say); it is
	// called once, by Register.
	Check() error
}

// Registry maps names to entries of one kind. It is not safe for concurrent
// Register calls; lookups may run concurrently once registration is done.
type Registry[E Entry] struct {
	kind string
	m    map[string]E
}

// New returns an empty registry of entries called kind in messages
// ("lock", "fault", ...).
func New[E Entry](kind string) *Registry[E] {
	return &Registry[E]{kind: kind, m: map[string]E{}}
}

// Kind is what the registry's entries are called in messages.
func (r *Registry[E]) Kind() string { return r.kind }

// Register adds entries. A name must be unique, non-empty and free of
// commas and spaces (names appear in flags and lists); the entry's own Check
// must pass. Nothing is added if any entry is refused.
func (r *Registry[E]) Register(entries ...E) error {
	seen := map[string]bool{}
	for _, e := range entries {
		name, _ := e.About()
		switch {
		case name == "":
			return fmt.Errorf("register %s: a name is required", r.kind)
		case strings.ContainsAny(name, ", \t\n"):
			return fmt.Errorf("register %s %q: names may not contain commas or spaces", r.kind, name)
		case seen[name]:
			return fmt.Errorf("register %s %q: given twice", r.kind, name)
		}
		if _, dup := r.m[name]; dup {
			return fmt.Errorf("register %s %q: already registered", r.kind, name)
		}
		if err := e.Check(); err != nil {
			return fmt.Errorf("register %s %q: %w", r.kind, name, err)
		}
		seen[name] = true
	}
	for _, e := range entries {
		name, _ := e.About()
		r.m[name] = e
	}
	return nil
}

// Get returns the named entry, or an error naming the known ones.
func (r *Registry[E]) Get(name string) (E, error) {
	e, ok := r.m[name]
	if !ok {
		var zero E
		return zero, fmt.Errorf("unknown %s %q (known: %s)", r.kind, name, strings.Join(r.Names(), ", "))
	}
	return e, nil
}

// Lookup returns the entries named, in order, refusing unknown names and
// repeats.
func (r *Registry[E]) Lookup(names []string) ([]E, error) {
	out := make([]E, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("%s %q named twice", r.kind, n)
		}
		seen[n] = true
		e, err := r.Get(n)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Names lists the registered names, sorted.
func (r *Registry[E]) Names() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Entries lists the registered entries, sorted by name.
func (r *Registry[E]) Entries() []E {
	out := make([]E, 0, len(r.m))
	for _, n := range r.Names() {
		out = append(out, r.m[n])
	}
	return out
}

// Clone returns a copy that can be extended without changing r.
func (r *Registry[E]) Clone() *Registry[E] {
	c := New[E](r.kind)
	for n, e := range r.m {
		c.m[n] = e
	}
	return c
}

// ErrNoConstructor is what an entry's Check returns when it has nothing to
// build its extension with.
var ErrNoConstructor = errors.New("a constructor is required")

// NeedConstructor is the Check of an entry that needs nothing but its
// constructor (has: the entry's New or Start is set), so that every such
// entry refuses a missing one with the same error.
func NeedConstructor(has bool) error {
	if !has {
		return ErrNoConstructor
	}
	return nil
}

// Of returns a registry of kind holding entries: how a package lists its
// built-ins. It panics if one is refused, since a built-in that does not
// register is a programming error, not a user's.
func Of[E Entry](kind string, entries ...E) *Registry[E] {
	r := New[E](kind)
	if err := r.Register(entries...); err != nil {
		panic(err)
	}
	return r
}
