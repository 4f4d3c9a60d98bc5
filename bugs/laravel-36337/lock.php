<?php
// Laravel's cache lock over phpredis with a serializer, as a locktorture
// lock program (Debian's php-illuminate-cache and php-illuminate-redis
// 8.83.26, php-redis 5.3.7).
//
// phpredis serializes the values of SET, so the lock's owner is stored as
// s:7:"c0-p1-1"; (SERIALIZER_PHP), but not the arguments of EVAL: before
// v8.32.0 Illuminate\Cache\RedisLock::release() compared the stored value
// with the raw owner, never matched, and deleted nothing
// (laravel/framework#36337). v8.32.0 added PhpRedisLock, which packs the
// owner as phpredis stores it, and RedisStore::lock() returns it for a
// phpredis connection (#36412).
//
// - --redislock: new RedisLock($store->lockConnection(),
//   $store->getPrefix().$name, $seconds, $owner), which is the body of
//   RedisStore::lock() up to v8.31.0: what every phpredis user got (the
//   bug; RedisLock.php is the same at v8.31.0 and 8.83.26);
// - default: $store->lock($name, $seconds, $owner) of 8.83.26, a
//   PhpRedisLock (the fix).
//
// The store is what a Laravel app configures: a RedisManager over phpredis
// with 'serializer' => Redis::SERIALIZER_PHP in its options, the cache
// prefix "laravel_cache" (Laravel's default for APP_NAME "Laravel"), so the
// key of lock:0 is laravel_cache:lock:0 (key_template in the hello). The
// owner is the request's token; the value Redis holds is its serialized
// form, which the grant names as the token. $seconds is the harness's TTL in
// whole seconds (EX), so the hello says ttl_granularity_ms 1000.
//
// acquire() and release() each send one command (SET ... EX s NX, EVAL), so
// the program steps right before each call. The wait is the harness's: one
// acquire() per attempt, paced by the hello's retry (Lock::block() counts
// its wait in whole seconds). PHP serves one request at a time: protocol
// version 1, topology single.

require __DIR__ . '/lockproto.php';
require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';

use Illuminate\Cache\RedisLock;
use Illuminate\Cache\RedisStore;
use Illuminate\Redis\RedisManager;

const PREFIX = 'laravel_cache';
$buggy = in_array('--redislock', array_slice($argv, 1), true);

$h = new Harness();
$hello = $h->hello;
mt_srand((int) ($hello['seed'] ?? 0));
[$host, $port] = explode(':', $hello['addrs'][0]);
$connection = ['host' => $host, 'port' => (int) $port];
if (($hello['command_timeout_ms'] ?? 0) > 0) {
    $connection['timeout'] = $connection['read_timeout'] = $hello['command_timeout_ms'] / 1000;
}
$manager = new RedisManager(null, 'phpredis', [
    'options' => ['serializer' => Redis::SERIALIZER_PHP],
    'default' => $connection,
]);
$store = new RedisStore($manager, PREFIX, 'default');
$seconds = intdiv($hello['ttl_ms'], 1000);
$retry = $hello['retry'];

// pause is the wait in ms after the n-th failed attempt, as the hello's retry says.
$pause = function (int $n) use ($retry): float {
    $base = min($retry['max_ms'], $retry['first_ms'] * 2 ** ($n - 1));
    return $base + mt_rand() / mt_getrandmax() * $retry['jitter'] * $base;
};

$lockFor = function (string $key, string $owner) use ($store, $seconds, $buggy) {
    if ($buggy) {
        return new RedisLock($store->lockConnection(), $store->getPrefix() . $key, $seconds, $owner);
    }
    return $store->lock($key, $seconds, $owner);
};

// stored is the value Redis holds for an owner: phpredis serializes it.
$stored = function (string $owner) use ($store): string {
    return $store->lockConnection()->client()->_serialize($owner);
};

$held = []; // the granted token (the stored value) -> its lock

$acquire = function (string $key, string $token) use ($h, $hello, $lockFor, $pause, $stored, &$held): array {
    $lock = $lockFor($key, $token);
    $deadline = microtime(true) + $hello['wait_ms'] / 1000;
    for ($n = 1; ; $n++) {
        $h->step('attempt');
        try {
            $ok = $lock->acquire();
        } catch (Throwable $e) {
            return ['outcome' => 'unknown', 'error' => get_class($e) . ': ' . $e->getMessage()];
        }
        if ($ok) {
            $held[$stored($token)] = $lock;
            return ['outcome' => 'granted', 'token' => $stored($token)];
        }
        $wait = $pause($n);
        if ($hello['wait_ms'] <= 0 || microtime(true) + $wait / 1000 > $deadline) {
            return ['outcome' => 'not_acquired'];
        }
        usleep((int) ($wait * 1000));
    }
};

$release = function (string $key, string $token) use ($h, &$held): array {
    $lock = $held[$token] ?? null;
    unset($held[$token]);
    if ($lock === null) {
        return ['outcome' => 'unknown', 'error' => 'no lock held under token ' . $token];
    }
    $h->step('release');
    try {
        $deleted = $lock->release();
    } catch (Throwable $e) {
        return ['outcome' => 'unknown', 'error' => get_class($e) . ': ' . $e->getMessage()];
    }
    return ['outcome' => $deleted ? 'deleted' : 'not_deleted'];
};

$h->serve($buggy ? 'laravel-redislock' : 'laravel-phpredislock', '8.83.26',
    ['renewal' => false, 'fencing' => false, 'validity' => false], $acquire, $release,
    ['ttl_granularity_ms' => 1000, 'key_template' => PREFIX . ':{key}', 'topologies' => ['single']]);
