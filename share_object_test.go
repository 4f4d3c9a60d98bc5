package locktorture_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/locks"
)

// objectLock is one lock object its sharers (the clients of one --share
// group) hold together, as a library's lock object counts its holders: an
// acquire while the object holds the key joins the holders at once (by
// design: the sharers overlap within the object), and a release deletes
// the key whoever of the object still holds it (the bug: a client of
// another object then takes the key while a sharer still works).
type objectLock struct {
	cfg  locks.Config
	mu   sync.Mutex
	held map[string]int // key -> sharers holding it
}

func (l *objectLock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	lease := &locks.Lease{Key: key, Token: l.cfg.NewToken(), TTL: l.cfg.TTL}
	deadline := time.Now().Add(l.cfg.Wait)
	for {
		l.mu.Lock()
		if l.held[key] > 0 {
			l.held[key]++
			l.mu.Unlock()
			return lease, nil
		}
		l.mu.Unlock()
		ok, err := l.cfg.Nodes[0].SetNX(ctx, key, lease.Token, l.cfg.TTL).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			l.mu.Lock()
			l.held[key]++
			l.mu.Unlock()
			return lease, nil
		}
		if time.Now().After(deadline) {
			return nil, locks.ErrNotAcquired
		}
		if !sleep.For(ctx, l.cfg.RetryDelayOrDefault()) {
			return nil, ctx.Err()
		}
	}
}

func (l *objectLock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	l.mu.Lock()
	l.held[lease.Key] = max(0, l.held[lease.Key]-1)
	l.mu.Unlock()
	n, err := l.cfg.Nodes[0].Del(ctx, lease.Key).Result()
	return n > 0, err
}

// TestShareTellsObjectsApart: under --share 2, a lock object whose sharers
// overlap by design and whose release lets a client of the other object
// in shows both double holders, and each says which it is: in its words,
// in summary.json's shared_object, and in the report.
func TestShareTellsObjectsApart(t *testing.T) {
	needRedis(t)
	regs := locktorture.Builtin()
	if err := regs.Locks.Register(locks.Entry{Name: "object-lock", Summary: "sharers hold together; a release deletes the key",
		New: func(cfg locks.Config) (locks.Lock, error) { return &objectLock{cfg: cfg, held: map[string]int{}}, nil }}); err != nil {
		t.Fatal(err)
	}
	o := short("object-lock", 1)
	o.Registries, o.Share, o.Duration = regs, 2, 2*time.Second
	res := run(t, o)
	seen := map[bool]string{}
	for _, a := range res.Report.Anomalies {
		if a.Kind != checker.KindDoubleHolder {
			continue
		}
		if a.SharedObject == nil {
			t.Fatalf("a double holder under --share 2 says nothing of its lock objects: %s", a.Detail)
		}
		one := a.Clients[0]/2 == a.Clients[1]/2
		if *a.SharedObject != one {
			t.Errorf("clients %v: shared_object %v, want %v: %s", a.Clients, *a.SharedObject, one, a.Detail)
		}
		seen[one] = a.Detail
	}
	for _, c := range []struct {
		one  bool
		says string
	}{{true, "(one lock object: clients "}, {false, "(two lock objects: clients "}} {
		if !strings.Contains(seen[c.one], c.says) {
			t.Errorf("no double holder saying %q among %d listed (%v)", c.says, len(res.Report.Anomalies), res.Report.Classes)
		}
	}
	data, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Anomalies []struct {
			Kind         string `json:"kind"`
			SharedObject *bool  `json:"shared_object"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	inSummary := map[bool]bool{}
	for _, a := range sum.Anomalies {
		if a.Kind == string(checker.KindDoubleHolder) && a.SharedObject != nil {
			inSummary[*a.SharedObject] = true
		}
	}
	if !inSummary[true] || !inSummary[false] {
		t.Errorf("summary.json's double holders carry shared_object %v, want both true and false", inSummary)
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"one lock object", "two lock objects"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("report.html does not say %q", w)
		}
	}
}
