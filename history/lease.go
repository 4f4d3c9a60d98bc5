package history

import (
	"fmt"
	"strconv"
	"strings"
)

// reentrantSep separates a reentrant lease's owner from its nesting info.
const reentrantSep = "#"

// ReentrantLease names one acquisition of a reentrant lock: its owner (the
// process holding the hash field), the how-many-th acquisition of that owner
// it is, and the nesting depth the lock reported. The lease id is part of the
// history format, so a checker reads the depth back without lock code.
func ReentrantLease(owner string, n, depth int64) string {
	return fmt.Sprintf("%s%s%d/%d", owner, reentrantSep, n, depth)
}

// SameAcquisition reports whether two leases name one acquisition: the
// same lease, or one acquisition of a reentrant owner at two depths (a
// lock whose count came out one off names its outer acquire at depth 2
// and its release at depth 1).
func SameAcquisition(a, b string) bool {
	if a == b {
		return true
	}
	_, _, oka := ParseReentrantLease(a)
	_, _, okb := ParseReentrantLease(b)
	return oka && okb && a[:strings.LastIndexByte(a, '/')] == b[:strings.LastIndexByte(b, '/')]
}

// SameOwner reports whether two leases belong to one owner: the same
// lease, or two acquisitions of one reentrant owner (ReentrantLease).
func SameOwner(a, b string) bool {
	oa, _, _ := ParseReentrantLease(a)
	ob, _, _ := ParseReentrantLease(b)
	return a != "" && oa == ob
}

// ParseReentrantLease splits a lease made by ReentrantLease. Any other lease
// id is returned whole as the owner, with ok false.
func ParseReentrantLease(lease string) (owner string, depth int64, ok bool) {
	i := strings.LastIndex(lease, reentrantSep)
	if i < 0 {
		return lease, 0, false
	}
	rest := lease[i+len(reentrantSep):]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return lease, 0, false
	}
	d, err := strconv.ParseInt(rest[j+1:], 10, 64)
	if err != nil || d < 1 {
		return lease, 0, false
	}
	return lease[:i], d, true
}
