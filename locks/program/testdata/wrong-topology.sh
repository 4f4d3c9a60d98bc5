# A lock whose library has no Sentinel or Cluster client, as its hello says.
read -r hello
echo '{"type":"hello","protocol":1,"name":"single-only","version":"0","topologies":["single"]}'
while read -r line; do :; done
