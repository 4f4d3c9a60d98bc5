package model

import (
	"fmt"

	"github.com/locktorture/locktorture/history"
)

// How the model's operations and states read, in the explanation of a key
// found not linearizable and in porcupine's visualization: whose each lease
// is, and what each operation did.

// keyModel holds what the descriptions of the keys' operations and states
// need: who each lease belongs to. Lease ids are dense over all the keys of
// a check.
type keyModel struct {
	leases []leaseMeta // index = dense lease id
}

type leaseMeta struct {
	id      string
	client  int
	process int
	op      int // acquire's index into index.ops, -1 if unknown
}

func (km *keyModel) meta(id int32) leaseMeta {
	if id <= 0 || int(id) >= len(km.leases) {
		return leaseMeta{id: "?", client: -1, process: -1, op: -1}
	}
	return km.leases[id]
}

func (km *keyModel) leaseName(id int32) string { return km.meta(id).id }

func (km *keyModel) describeOp(in *lockInput) string {
	switch in.kind {
	case kStart:
		return "segment starts: " + km.describeState(in.start)
	case kProbe, kCut:
		return "segment cut at " + history.FormatTime(in.call)
	case kEnd:
		return "end of the history: operations of unknown outcome placed after this never happened"
	}
	var what string
	switch in.kind {
	case kAcquire:
		what = "acquire"
	case kRelease:
		what = "release"
	case kRefresh:
		what = "refresh"
	}
	out := string(in.status)
	if in.kind == kRelease && in.status == history.OK {
		if in.deleted {
			out = "ok, deleted"
		} else {
			out = "ok, nothing deleted"
		}
	}
	ttl := ""
	if in.kind != kRelease {
		if in.ttl > 0 {
			ttl = ", ttl " + history.FormatDuration(in.ttl)
		} else {
			ttl = ", no ttl"
		}
	}
	return fmt.Sprintf("client %d (process %d) %s %s%s -> %s [%s, %s]",
		in.client, in.process, what, km.leaseName(in.lease), ttl, out, history.FormatTime(in.call), history.FormatTime(in.gaveUp))
}

func (km *keyModel) describeState(s lockState) string {
	if s.sink {
		return "(past the cut or the end: not checked)"
	}
	if s.holder == 0 {
		return "free"
	}
	m := km.meta(s.holder)
	exp := "never expires"
	if s.ttl > 0 {
		exp = "may expire from " + history.FormatTime(s.start+s.ttl-ExpirySlack)
	}
	return fmt.Sprintf("held by client %d (lease %s, written no earlier than %s, %s)", m.client, m.id, history.FormatTime(s.start), exp)
}
