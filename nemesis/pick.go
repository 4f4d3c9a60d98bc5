// The seeded choice of the fault for each window of a Schedule, made so
// that shrinking a failure's fault list keeps the windows it needed.

package nemesis

import (
	"encoding/binary"
	"hash/fnv"
)

// pick chooses the fault of the schedule's n-th window by rendezvous
// hashing: every fault scores hash(seed, n, name) and the lowest wins. Each
// window's choice is still uniform over the faults given, but it depends on
// which faults are given, not on how many there are or in what order. So a
// rerun of the same seed with one fault left out keeps every window in which
// another fault was chosen exactly as it was (and the schedule draws no
// random number for the choice, so the windows' times and targets stay
// too): that is what lets `torture shrink` drop the faults a failure did
// not need without losing the one it did.
func pick(seed int64, n int, faults []Fault) Fault {
	var best Fault
	var bestScore uint64
	for _, f := range faults {
		if s := score(seed, n, f.Name()); best == nil || s < bestScore {
			best, bestScore = f, s
		}
	}
	return best
}

// score hashes (seed, n, name) and mixes the result (splitmix64's
// finalizer), so that names differing in one letter score independently.
func score(seed int64, n int, name string) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	h.Write(b[:])
	h.Write([]byte(name))
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
