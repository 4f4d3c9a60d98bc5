# Each try sends two commands, the write first (as SETNX then PEXPIRE does),
# and its grant names the writing step with from_step. Its lock is a flag
# in the process (one client); what is under test is where the lease starts.
read -r hello
echo '{"type":"hello","protocol":1,"name":"two-commands","version":"0"}'
n=0
while read -r line; do
  case "$line" in *'"go"'*) continue ;; esac
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
  *'"acquire"'*)
    n=$((n + 1)); write=$n
    echo "{\"type\":\"step\",\"step\":$n,\"point\":\"attempt\",\"request\":$id}"
    sleep 0.02
    n=$((n + 1))
    echo "{\"type\":\"step\",\"step\":$n,\"point\":\"between-setnx-and-pexpire\",\"request\":$id}"
    echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"granted\",\"from_step\":$write}" ;;
  *) echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"deleted\"}" ;;
  esac
done
