#!/usr/bin/env bash
# Installs what locktorture's runs and tests need when it is missing:
# redis-server (and redis-sentinel), libfaketime, chromium (the report
# tests render report.html in it), and python3-redis (the redis-py lock
# programs; Debian's /usr/bin/python3 must import it, whatever python3 comes
# first on PATH), and node-redis (the node-redis lock program; the harness
# puts Debian's module folders on NODE_PATH, so check the same way), from
# Debian's packages; python3-django-redis for the django-redis program
# (a lock that names its own key), and PHP with phpredis and Laravel's
# cache and Redis components for the bug museum's Laravel exhibit.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v faketime >/dev/null 2>&1 || need+=(faketime)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
/usr/bin/python3 -c 'import django_redis' >/dev/null 2>&1 || need+=(python3-django-redis)
# The bug museum's PHP exhibit: Laravel's cache lock over phpredis.
command -v php >/dev/null 2>&1 || need+=(php-cli)
php -r 'exit(class_exists("Redis") ? 0 : 1);' >/dev/null 2>&1 || need+=(php-redis)
test -f /usr/share/php/Illuminate/Cache/PhpRedisLock.php || need+=(php-illuminate-cache)
test -f /usr/share/php/Illuminate/Redis/autoload.php || need+=(php-illuminate-redis)
command -v node >/dev/null 2>&1 || need+=(nodejs)
NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs node -e "require('redis')" >/dev/null 2>&1 || need+=(node-redis)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
echo "installing ${need[*]} (apt-get)" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
# The package starts a system redis-server; locktorture starts its own.
$sudo systemctl disable --now redis-server >/dev/null 2>&1 || true
$sudo systemctl disable --now redis-sentinel >/dev/null 2>&1 || true
$sudo service redis-server stop >/dev/null 2>&1 || true
$sudo service redis-sentinel stop >/dev/null 2>&1 || true
