# Says its steps carry their CLOCK_MONOTONIC reading, then stamps each with
# the JSON value $1: a reading from before its request (1), from after the
# harness can have read it (far in the future), or no integer at all.
read -r hello
echo '{"type":"hello","protocol":1,"name":"bad-clock","version":"0","skips_go":true,"monotonic":true}'
n=0
while read -r request; do
  case "$request" in *'"type":"go"'*) continue ;; esac
  id=$(echo "$request" | sed 's/.*"id":\([0-9]*\).*/\1/')
  n=$((n + 1))
  echo "{\"type\":\"step\",\"step\":$n,\"point\":\"attempt\",\"request\":$id,\"mono_ns\":$1}"
  echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"not_acquired\"}"
done
