# Answers every acquire "not acquired": a run of it takes no lock at all.
read -r hello
echo '{"type":"hello","protocol":1,"name":"never-granted","version":"0"}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"not_acquired\"}"
done
