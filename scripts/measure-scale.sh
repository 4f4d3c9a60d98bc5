#!/usr/bin/env bash
# Measures what the verdict costs at scale on this machine, as
# results/README.md's "Scale and speed, measured" reports it:
#   1. redis-benchmark's SET NX PX (8 connections, 8 keys): the yardstick;
#   2. a fault-free token run at full speed, 8 clients on 8 keys, long
#      enough for about OPS lock operations: its rate, and peak RSS;
#   3. torture check of that run's history from disk: time and peak RSS;
#   4. with SOAK=1, a 5-minute run of the same, its RSS every 10 s.
# Usage: scripts/measure-scale.sh [OPS]   (default 1000000)
# Everything runs under a temp dir that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ops="${1:-1000000}"
for tool in redis-server redis-benchmark redis-cli /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "measure-scale: $tool is missing" >&2; exit 2; }
done
work="$(mktemp -d)"
port=""
cleanup() {
  [ -n "$port" ] && redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/torture" ./cmd/torture

port=$(( 20000 + RANDOM % 20000 ))
redis-server --port "$port" --save '' --appendonly no --daemonize yes --dir "$work" --logfile "$work/rb.log"
sleep 0.5
rps=$(redis-benchmark -p "$port" -c 8 -n 300000 -r 8 -q SET 'lock:__rand_int__' v NX PX 1000 |
  tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
port=""
echo "redis-benchmark SET NX PX -c 8 -r 8: $rps req/s"

# A short run finds the rate, which sets the duration for OPS operations.
rate=$("$work/torture" run --lock token --clients 8 --keys 8 --hold 0s..0s --ttl 1s --duration 5s --seed 1 \
  --quiet --out "$work/probe" | sed -n 's/.*(\([0-9]*\) ops\/s).*/\1/p')
secs=$(( ops / rate + 1 ))
echo "probe: $rate lock ops/s ($(awk -v a="$rate" -v b="$rps" 'BEGIN{printf "%.1f", 100*a/b}')% of redis-benchmark); run of ${secs}s for about $ops operations"

rss() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{printf "%.0f MB", $1/1024}'; }
wall() { sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }
/usr/bin/time -v "$work/torture" run --lock token --clients 8 --keys 8 --hold 0s..0s --ttl 1s --duration "${secs}s" \
  --seed 1 --quiet --out "$work/run" > "$work/run.out" 2> "$work/run.time"
sed -n 's/^\([0-9]* ops in .*\)$/run: \1/p' "$work/run.out"
echo "run: peak RSS $(rss "$work/run.time"), verdict $(sed -n 's/^verdict: //p' "$work/run.out")"
hist=$(ls "$work"/run/*/history.jsonl)
echo "history: $(wc -l < "$hist") lines, $(( $(stat -c %s "$hist") / 1048576 )) MB"
/usr/bin/time -v "$work/torture" check "$hist" > "$work/check.out" 2> "$work/check.time" || true
echo "check: $(wall "$work/check.time") wall, peak RSS $(rss "$work/check.time"), verdict $(sed -n 's/^verdict: //p' "$work/check.out")"
rm -rf "$work/run"

if [ "${SOAK:-}" = 1 ]; then
  /usr/bin/time -v "$work/torture" run --lock token --clients 8 --keys 8 --hold 0s..0s --ttl 1s --duration 300s --seed 2 \
    --quiet --out "$work/soak" > "$work/soak.out" 2> "$work/soak.time" &
  timer=$!
  sleep 1
  pid=$(pgrep -P "$timer" | head -1)
  for i in $(seq 1 30); do
    sleep 10
    kb=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null) || break
    [ -n "$kb" ] || break
    echo "soak: $((i * 10))s RSS $((kb / 1024)) MB"
  done
  wait "$timer" || true
  sed -n 's/^\([0-9]* ops in .*\)$/soak: \1/p' "$work/soak.out"
  echo "soak: peak RSS $(rss "$work/soak.time") (the check, summary and report at the end included)"
fi
