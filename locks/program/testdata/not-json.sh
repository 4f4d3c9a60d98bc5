# Answers the hello, then prints a line that is not JSON.
read -r hello
echo '{"type":"hello","protocol":1,"name":"misbehaving","version":"0"}'
read -r request
echo 'granted!'
while read -r line; do :; done
