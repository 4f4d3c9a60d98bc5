# Answers the hello, then a request that was never made.
read -r hello
echo '{"type":"hello","protocol":1,"name":"misbehaving","version":"0"}'
read -r request
echo '{"type":"reply","id":999,"outcome":"granted"}'
while read -r line; do :; done
