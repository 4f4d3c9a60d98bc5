# Answers the hello, then never replies to a request.
read -r hello
echo '{"type":"hello","protocol":1,"name":"misbehaving","version":"0"}'
while read -r line; do :; done
