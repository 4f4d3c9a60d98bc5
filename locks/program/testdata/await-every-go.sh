# Follows the spec to the letter: waits for the go of every step, in a run
# without faults too. Its lock is a flag in the process (with one client
# nothing contends); what is under test is that the harness answers every
# step, and asks for the wait in every run (await_go true: a lease is
# dated from its go).
read -r hello
case "$hello" in
*'"await_go":true'*) ;;
*) echo "expected await_go true in every run, got $hello" >&2; exit 1 ;;
esac
echo '{"type":"hello","protocol":1,"name":"literal","version":"0"}'
n=0
while read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  n=$((n + 1))
  case "$line" in
  *'"acquire"'*) point=attempt outcome=granted ;;
  *) point=release outcome=deleted ;;
  esac
  echo "{\"type\":\"step\",\"step\":$n,\"point\":\"$point\",\"request\":$id}"
  read -r go || exit 0
  case "$go" in
  *"\"step\":$n"*) ;;
  *) echo "expected the go of step $n, got $go" >&2; exit 1 ;;
  esac
  echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"$outcome\"}"
done
