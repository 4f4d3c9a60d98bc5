# A lock whose library sets its TTL in whole seconds, as its hello says.
read -r hello
echo '{"type":"hello","protocol":1,"name":"whole-seconds","version":"0","ttl_granularity_ms":1000}'
while read -r line; do :; done
