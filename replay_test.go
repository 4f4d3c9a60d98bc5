package locktorture

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/settings"
)

// TestHeaderRoundTrip: every setting a header records comes back from it
// as the value the run had, the faults' own included, and a header from
// before the settings were declared once still reads.
func TestHeaderRoundTrip(t *testing.T) {
	retries := 1
	o := DefaultOptions()
	o.Lock, o.Workload, o.Topology, o.Nodes = "redlock", "mutex", "redlock", 5
	o.Clients, o.Keys, o.TTL, o.Seed = 6, 3, 700*time.Millisecond, 42
	o.HoldMin, o.HoldMax, o.Overrun, o.Abandon, o.Think = time.Millisecond, 9*time.Millisecond, 0.25, 0.01, 3*time.Millisecond
	o.Wait, o.RetryDelay, o.RedisRetries, o.RedisTimeout = time.Second, 2*time.Millisecond, &retries, 80*time.Millisecond
	o.Persistence, o.Faults, o.Checkers = cluster.PersistAlways, []string{"latency", "partition"}, []string{"reentrant"}
	o.NemesisInterval, o.NemesisDuration, o.Target, o.NemesisTrigger, o.NemesisWarmup = time.Second, 300*time.Millisecond, TargetRandom, "acquire", 2*time.Second
	o.Settings = settings.Values{"latency": 40 * time.Millisecond, "direction": "up", "latency-all": true}
	pl, err := o.WithDefaults().validate()
	if err != nil {
		t.Fatal(err)
	}
	info := &history.RunInfo{Lock: o.Lock, Workload: o.Workload, Topology: o.Topology, Clients: o.Clients, Keys: o.Keys,
		TTLMillis: o.TTL.Milliseconds(), Seed: o.Seed, Params: o.headerParams(pl.settings)}
	back, err := OptionsFromRun(info, Registries{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range runFields() {
		if f.where&inHeader == 0 {
			continue
		}
		if got, want := f.get(&back), f.get(&o); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v back from the header, the run had %v", f.Name, got, want)
		}
	}
	if !reflect.DeepEqual(back.Settings, o.Settings) {
		t.Errorf("the faults' settings: %v back, the run had %v", back.Settings, o.Settings)
	}

	old := &history.RunInfo{Lock: "token", Clients: 4, Keys: 1, TTLMillis: 300, Seed: 1, Params: map[string]string{
		"hold": "5ms..30ms", "redis_retries": "default", "nemesis_interval": "1s", "nemesis": "", "persistence": "", "target": "protocol"}}
	if back, err := OptionsFromRun(old, Registries{}); err != nil || back.NemesisInterval != time.Second || back.RedisRetries != nil {
		t.Errorf("an older header: %v, interval %v, retries %v", err, back.NemesisInterval, back.RedisRetries)
	}
	// A header of before the faults setting had its name kept it as nemesis.
	older := &history.RunInfo{Lock: "token", Clients: 4, Keys: 1, TTLMillis: 300, Params: map[string]string{"nemesis": "latency,pause-client"}}
	if back, err := OptionsFromRun(older, Registries{}); err != nil || strings.Join(back.Faults, ",") != "latency,pause-client" {
		t.Errorf("a header's nemesis param: %v, faults %v", err, back.Faults)
	}
	var viaAlias Options
	if err := viaAlias.Set("nemesis", "latency"); err != nil || strings.Join(viaAlias.Faults, ",") != "latency" {
		t.Errorf("Set(nemesis): %v, faults %v", err, viaAlias.Faults)
	}
	bad := &history.RunInfo{Lock: "token", Clients: 4, Keys: 1, TTLMillis: 300, Params: map[string]string{"colour": "red"}}
	if _, err := OptionsFromRun(bad, Registries{}); err == nil || !strings.Contains(err.Error(), `unknown setting "colour"`) {
		t.Errorf("an unknown header param: %v", err)
	}
}

// TestProgramHeaderReplays: a lock program's header replays by its lock
// setting, an exec: command line included; its own name and version
// (the program field, or an older header's lock_program param) is never a
// setting; and an older exec: header, which kept only that name, is one
// clear line.
func TestProgramHeaderReplays(t *testing.T) {
	const line = `exec:PYTHONUNBUFFERED=1 python3 "my lock.py"`
	for _, tc := range []struct {
		name, lock, program, param string
		want, err                  string
	}{
		{name: "in-tree", lock: "redis-py", program: "redis-py 4.3.4", want: "redis-py"},
		{name: "in-tree, older header", lock: "redis-py", param: "redis-py 4.3.4", want: "redis-py"},
		{name: "exec", lock: line, program: "my-lock 1.0", want: line},
		{name: "exec, older header", lock: "my-lock 1.0", param: "my-lock 1.0", err: "cannot be replayed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &history.RunInfo{Lock: tc.lock, Program: tc.program, Clients: 2, Keys: 1, TTLMillis: 300, Seed: 1,
				Params: map[string]string{"duration": "1s"}}
			if tc.param != "" {
				info.Params["lock_program"] = tc.param
			}
			o, err := OptionsFromRun(info, Registries{})
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("error %v, want one line saying %q", err, tc.err)
			case tc.err != "":
			case err != nil:
				t.Fatal(err)
			case o.Lock != tc.want || len(o.Settings) != 0 || o.Duration != time.Second:
				t.Errorf("lock %q, settings %v, duration %v; want lock %q", o.Lock, o.Settings, o.Duration, tc.want)
			}
		})
	}
}
