# Answers the hello, then exits at the first request.
read -r hello
echo '{"type":"hello","protocol":1,"name":"misbehaving","version":"0"}'
read -r request
exit 1
