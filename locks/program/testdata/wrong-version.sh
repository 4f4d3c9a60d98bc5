# Answers the hello in protocol 2.
read -r hello
echo '{"type":"hello","protocol":2,"name":"from-the-future","version":"9"}'
while read -r line; do :; done
