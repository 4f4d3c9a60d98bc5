// Package locktorture wires one torture run: it brings up Redis, puts a lock
// under concurrent clients running a workload, records the history, checks it
// and writes the run's folder. The torture CLI (package cli) is a thin shell
// around Run and Check, and a Go test can call them the same way.
//
// Options are resolved and judged once, into a plan, before anything
// starts (plan.go); then a run is five stages, each in the file that owns
// it, and each reading the plan without writing it back:
//
//  1. start the backend and the network: the Redis topology on its backend,
//     and every client's fault proxies (backend.go, env.go);
//  2. start the clients: the recorder with its live check, the lock's
//     clients and the workload they run (clients.go);
//  3. run the schedule: the clients run for the duration while the nemesis
//     starts and heals its faults (schedule.go);
//  4. check: the live check judges what the stream has not yet
//     (verdict.go);
//  5. write: summary.json and report.html in the run folder (write.go).
//
// # File order
//
// The files read in this order, and each uses only what the files before
// it declare, so the package reads top to bottom with no arrow back up:
//
//   - options.go: Options, what a caller asks for; Status and UsageError;
//   - aim.go: how faults aim (Options.Target);
//   - settings.go: the run's own settings by name, one declaration for the
//     flags, the spec keys and the history header;
//   - plan.go: the options with their defaults, judged and looked up once;
//   - replay.go: the options of a recorded run, from its header;
//   - backend.go, env.go: stage 1;
//   - live.go: the live check the clients' recorder feeds;
//   - clients.go: stage 2;
//   - state.go: the Result, and the run the stages share;
//   - schedule.go, verdict.go, write.go: stages 3, 4 and 5;
//   - run.go: Run, the stages in order;
//   - check.go: Check, a saved history checked again without Redis.
package locktorture
