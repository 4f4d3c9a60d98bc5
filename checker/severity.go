package checker

import "fmt"

// Severity says which promise an anomaly breaks. A gate can fail on safety
// alone: a lock that is sometimes slow to hand out a free key is a different
// matter from one that hands out a held one.
type Severity string

const (
	// SeveritySafety: two holders, a foreign release, an impossible order,
	// a corrupted resource: the lock let something happen it must not.
	SeveritySafety Severity = "safety"
	// SeverityLiveness: a free lock could not be taken (stuck lock,
	// spurious failure, a release that left its key in place): the lock
	// refused something it should have allowed.
	SeverityLiveness Severity = "liveness"
)

// SeverityOf returns the severity of a built-in anomaly kind. A kind no
// built-in declares counts as safety, the cautious side, unless the entry
// of the checker that reports it declares it liveness (Entry.Liveness),
// which a check through a Registry reads.
func SeverityOf(k Kind) Severity {
	switch k {
	case KindStuckLock, KindSpuriousFailure, KindFailedRelease:
		return SeverityLiveness
	}
	return SeveritySafety
}

// severities are the kinds' severities as the entries of a registry
// declare them, built-ins and outside checkers alike.
type severities map[Kind]Severity

func severitiesOf(r *Registry) severities {
	s := severities{}
	for _, e := range r.Entries() {
		for _, k := range e.Liveness {
			s[k] = SeverityLiveness
		}
	}
	return s
}

func (s severities) of(k Kind) Severity {
	if v, ok := s[k]; ok {
		return v
	}
	return SeverityOf(k)
}

// apply sets the severity of every anomaly of rep, and its counts by
// severity, from s.
func (s severities) apply(rep *Report) {
	rep.Severity = map[Severity]int{}
	for k, n := range rep.Count {
		rep.Severity[s.of(k)] += n
	}
	for i := range rep.Anomalies {
		rep.Anomalies[i].Severity = s.of(rep.Anomalies[i].Kind)
	}
	for _, r := range rep.Results {
		for i := range r.Anomalies {
			r.Anomalies[i].Severity = s.of(r.Anomalies[i].Kind)
		}
	}
}

// FailOn says which anomalies make a gate fail.
type FailOn string

const (
	// FailOnAll: any anomaly fails (the default).
	FailOnAll FailOn = "all"
	// FailOnSafety: only safety anomalies fail; liveness ones are reported.
	FailOnSafety FailOn = "safety"
)

// ParseFailOn reads a --fail-on value; empty means all.
func ParseFailOn(s string) (FailOn, error) {
	switch FailOn(s) {
	case "", FailOnAll:
		return FailOnAll, nil
	case FailOnSafety:
		return FailOnSafety, nil
	}
	return "", fmt.Errorf("unknown --fail-on %q (want safety or all)", s)
}

// Gate is the verdict a gate judging by f sees: with FailOnSafety an
// otherwise decided history whose only anomalies are liveness ones is Valid.
// A check that could not decide stays Unknown either way.
func (r *Report) Gate(f FailOn) Verdict {
	if f != FailOnSafety || r.Verdict != Invalid {
		return r.Verdict
	}
	if r.Severity[SeveritySafety] > 0 {
		return Invalid
	}
	for _, res := range r.Results {
		if res.Verdict == Unknown {
			return Unknown
		}
	}
	if len(r.Untested) > 0 {
		return Untested
	}
	return Valid
}
