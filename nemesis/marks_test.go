// Test helpers for starting faults by hand, outside a Schedule: a Marker
// that records what a fault marked, and the built-ins built by name.

package nemesis

import "strings"

// recordedMarks keeps what a fault marked, for tests that start faults by
// hand, outside a Schedule.
type recordedMarks struct{ marks []string }

func (m *recordedMarks) Began(target string) { m.marks = append(m.marks, target) }
func (m *recordedMarks) Step(what string)    { m.marks = append(m.marks, what) }
func (m *recordedMarks) String() string      { return strings.Join(m.marks, "; ") }

// newFaults builds the named built-in faults.
func newFaults(names string, o Options) ([]Fault, error) {
	es, err := Builtin().Lookup(strings.Split(names, ","))
	if err != nil {
		return nil, err
	}
	return Build(es, o), nil
}
