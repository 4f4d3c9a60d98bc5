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
	// spurious failure): the lock refused something it should have allowed.
	SeverityLiveness Severity = "liveness"
)

// SeverityOf returns the severity of an anomaly kind. Kinds not known to
// this package (a checker from outside) count as safety, the cautious side.
func SeverityOf(k Kind) Severity {
	switch k {
	case KindStuckLock, KindSpuriousFailure:
		return SeverityLiveness
	}
	return SeveritySafety
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
