// Package locktorture wires one torture run: it brings up Redis, puts a lock
// under concurrent clients running a workload, records the history, checks it
// and writes the run's folder. The torture CLI (package cli) is a thin shell
// around Run and Check, and a Go test can call them the same way.
//
// Options are resolved and judged once, into a plan, before anything
// starts (plan.go); then a run is a pipeline of five stages, each a
// function in the file that owns it, taking the plan and what the stages
// before it returned, and returning what the next needs:
//
//  1. startServers: the faults, the Redis topology on its backend, and
//     every client's fault proxies (servers.go), returning the servers;
//  2. startClients: the lock, the history's header and recorder with its
//     live check, each client's lock and the workload they run
//     (clients.go), returning the fleet;
//  3. runSchedule: the clients run for the duration while the nemesis
//     starts and heals its faults (schedule.go), returning what ran;
//  4. judge: the live check judges what the stream has not yet, and the
//     verdict is gated (verdict.go), returning the judgement; the Result
//     is assembled from stages 3 and 4 in one place (result.go);
//  5. write: summary.json and report.html in the run folder (write.go).
//
// # File order
//
// The files read in this order, and each uses only what the files before
// it declare, so the package reads top to bottom with no arrow back up
// (order_test.go holds it):
//
//   - options.go: Options, what a caller asks for; the registries, Status
//     and UsageError;
//   - settings.go: the run's own settings by name, one declaration for the
//     flags, the spec keys and the history header;
//   - plan.go: the options with their defaults, judged and looked up once;
//   - header.go: the history's header, built from the plan and read back
//     for a replay;
//   - servers.go: stage 1;
//   - live.go: the live check the clients' recorder feeds;
//   - clients.go: stage 2, with the plumbing that connects each client;
//   - schedule.go, verdict.go: stages 3 and 4;
//   - result.go: the Result, assembled from what the stages returned;
//   - write.go: stage 5;
//   - run.go: Run, the stages in order;
//   - check.go: Check, a saved history checked again without Redis.
package locktorture
