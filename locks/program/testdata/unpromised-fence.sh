# Grants every acquire with a fence it did not promise.
read -r hello
echo '{"type":"hello","protocol":1,"name":"misbehaving","version":"0"}'
while read -r request; do
  id=$(echo "$request" | sed 's/.*"id":\([0-9]*\).*/\1/')
  echo "{\"type\":\"reply\",\"id\":$id,\"outcome\":\"granted\",\"fence\":7}"
done
