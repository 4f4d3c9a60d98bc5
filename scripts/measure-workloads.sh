#!/usr/bin/env bash
# Measures the harness at full speed in every built-in workload, as issue
# figures and results/README.md's "Scale and speed, measured" report them: for each
# lock + workload, a fault-free run of 8 clients on 8 keys with zero hold
# and a 1 s TTL, then `torture check` and `torture report` of its history.
# Prints one table row per run: lock operations, their rate, peak RSS of
# the run (GNU time), the harness's longest stall (summary.json), CPU
# seconds per 100k operations, and the peak RSS of check and report.
# Operations are the lock's and the guarded resource's (stock-lua takes no
# lock at all).
# What a run and a check hold grows with the events of one TTL, so a TTL
# longer than 1 s stands in for a faster machine: at 2.5s, a machine at
# 13k lock ops/s holds what one at 33k holds with 1 s.
# Usage: scripts/measure-workloads.sh [SECONDS] [SEED] [TTL]  (default 40 1 1s)
# Everything runs under a temp dir that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-40}"
seed="${2:-1}"
ttl="${3:-1s}"
for tool in redis-server /usr/bin/time python3; do
  command -v "$tool" >/dev/null || { echo "measure-workloads: $tool is missing" >&2; exit 2; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go build -o "$work/torture" ./cmd/torture

field() { python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print(s.get(sys.argv[2], 0))" "$1" "$2"; }
rss() { awk '{printf "%.0f", $1/1024}' "$1"; }
echo "| lock + workload | lock + resource ops | lock ops/s | peak RSS MB | longest harness stall ms (0: none of 50 ms or more) | CPU s per 100k ops | check RSS MB | report RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
for pair in token:mutex token:batch token:stock token:stock-lua fenced:fenced-unchecked fenced:fenced reentrant:reentrant; do
  lock="${pair%%:*}" wl="${pair#*:}"
  out="$work/$lock-$wl"
  /usr/bin/time -f '%M %U %S' -o "$work/time" "$work/torture" run --lock "$lock" --workload "$wl" --clients 8 --keys 8 \
    --hold 0s..0s --ttl "$ttl" --duration "${secs}s" --seed "$seed" --quiet --out "$out" > "$work/run.out" || true
  dir=$(ls -d "$out"/*/ 2>/dev/null | head -1)
  [ -n "$dir" ] || { echo "measure-workloads: $lock + $wl wrote no run folder:" >&2; cat "$work/run.out" >&2; exit 1; }
  ops=$(( $(field "$dir/summary.json" ops) + $(field "$dir/summary.json" resource_ops) ))
  rate=$(field "$dir/summary.json" ops_per_sec)
  stall=$(field "$dir/summary.json" longest_stall_ms)
  read -r kb user sys < "$work/time"
  cpu=$(awk -v u="$user" -v s="$sys" -v n="$ops" 'BEGIN{printf "%.2f", (u+s)*100000/n}')
  /usr/bin/time -f '%M' -o "$work/check.time" "$work/torture" check "$dir/history.jsonl" > /dev/null || true
  /usr/bin/time -f '%M' -o "$work/report.time" "$work/torture" report "$dir" > /dev/null 2>&1 || true
  printf '| %s + %s | %s | %.0f | %s | %s | %s | %s | %s |\n' "$lock" "$wl" "$ops" "$rate" "$(echo "$kb" | awk '{printf "%.0f", $1/1024}')" \
    "$stall" "$cpu" "$(rss "$work/check.time")" "$(rss "$work/report.time")"
  rm -rf "$out"
done
