# A lock that writes a TTL of its own, the run's plus a tolerance of 150
# ms, as libraries that add one do, and says it in each grant's ttl_ms.
# Its lock is a flag in the process (one client); what is under test is
# the TTL the history records for each lease. TTL_MS overrides the value
# sent (a bad one ends the run).
read -r hello
echo '{"type":"hello","protocol":1,"name":"own-ttl","version":"0"}'
ttl=${TTL_MS:-$(( $(printf '%s\n' "$hello" | sed -n 's/.*"ttl_ms":\([0-9]*\).*/\1/p') + 150 ))}
n=0
while read -r line; do
  case "$line" in *'"go"'*) continue ;; esac
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
  *'"acquire"'*)
    n=$((n + 1))
    echo "{\"type\":\"step\",\"step\":$n,\"point\":\"attempt\",\"request\":$id}"
    echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"granted\",\"ttl_ms\":$ttl}" ;;
  *) echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"deleted\"}" ;;
  esac
done
