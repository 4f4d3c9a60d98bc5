# Reads the hello and exits without answering.
read -r hello
echo "giving up" >&2
exit 3
