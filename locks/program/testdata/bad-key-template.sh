# A hello whose key template names no key.
read -r hello
echo '{"type":"hello","protocol":1,"name":"no-key","version":"0","key_template":"app:lock"}'
while read -r line; do :; done
