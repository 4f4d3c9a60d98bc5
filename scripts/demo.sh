#!/usr/bin/env bash
# The demo: one lock that breaks (set-px under work longer than its TTL: the
# "second confusion") and one that holds (watchdog under the same load).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
go build -o bin/torture ./cmd/torture
echo "== set-px, 20% of holds outlive the 500ms TTL: expect INVALID"
./bin/torture run --lock set-px --clients 4 --ttl 500ms --hold 10ms..50ms --overrun 0.2 \
  --duration 8s --seed 1 --expect invalid
echo
echo "== watchdog under the same load: expect VALID"
./bin/torture run --lock watchdog --clients 4 --ttl 500ms --hold 10ms..50ms --overrun 0.2 \
  --duration 8s --seed 1 --expect valid
