package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
)

// Identity says which matrix a result belongs to: the spec (its bytes'
// digest), the build of torture that ran it, and the whole plan of cells
// and seeds. Shards merge, and a killed matrix resumes, only into a result
// of the same identity, so a merged matrix never mixes two specs or two
// builds.
type Identity struct {
	Spec     string     `json:"spec_sha256"`
	Build    string     `json:"build"`
	FullRuns bool       `json:"full_runs,omitempty"`
	Plan     []PlanCell `json:"plan"`
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// BuildID names the running build: its module and version, the VCS
// revision it was built from ("+dirty" with uncommitted changes) and the
// Go version. Two shards built from the same commit agree on it. A build
// without VCS stamps (-buildvcs=false, go run) is named by its
// executable's digest instead: Go links the same bytes from the same
// source, so the same build on two machines still agrees.
func BuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build"
	}
	s := bi.Main.Path + "@" + bi.Main.Version
	var rev, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	switch {
	case rev != "":
		s += " " + rev + dirty
	default:
		s += " " + exeDigest()
	}
	return s + " " + bi.GoVersion
}

// exeDigest is the SHA-256 of the running executable, shortened.
func exeDigest() string {
	exe, err := os.Executable()
	if err != nil {
		return "exe unknown"
	}
	f, err := os.Open(exe)
	if err != nil {
		return "exe unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "exe unknown"
	}
	return "exe " + hex.EncodeToString(h.Sum(nil))[:16]
}

// differs names the first way other's identity differs from id's, or "".
// a and b name the two results in the message.
func (id Identity) differs(other Identity, a, b string) string {
	switch {
	case id.Spec != other.Spec:
		return fmt.Sprintf("%s and %s are of different specs (sha256 %.12s and %.12s)", a, b, id.Spec, other.Spec)
	case id.Build != other.Build:
		return fmt.Sprintf("%s and %s are of different builds (%s and %s)", a, b, id.Build, other.Build)
	case id.FullRuns != other.FullRuns:
		return fmt.Sprintf("%s and %s differ in --full-runs", a, b)
	case !slices.EqualFunc(id.Plan, other.Plan, func(x, y PlanCell) bool {
		return x.Name == y.Name && slices.Equal(x.Seeds, y.Seeds)
	}):
		return fmt.Sprintf("%s and %s plan different cells or seeds (--cells, --seeds)", a, b)
	}
	return ""
}
