// node-redis (the `redis` package, v4) as a locktorture lock program: the
// lock its users write by hand, as its README shows it. Acquire is
// SET key token NX PX ttl, tried again at the harness's pace within its
// wait; release is a Lua compare-and-delete defined with defineScript, which
// node-redis sends as EVALSHA, then EVAL when Redis answers NOSCRIPT.
//
// It runs after lockproto.js in one `node -e` source (Harness comes from
// there); the harness puts Debian's module folders on NODE_PATH.

const { createClient, defineScript } = require('redis');
const redisVersion = require('redis/package.json').version;

// TOPOLOGIES are those this program serves; its registry entry declares
// the same, so the harness refuses the others before any server starts.
const TOPOLOGIES = ['single', 'redlock'];

const RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';

// seeded returns a small seeded generator (mulberry32): the hello's seed makes
// the retry jitter replay with the run.
function seeded(seed) {
  let s = (seed % 0x100000000) >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x100000000;
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const describe = (e) => `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : e}`;

async function main() {
  const harness = await Harness.open();
  const hello = harness.hello;
  const random = seeded(hello.seed || 0);
  const retry = hello.retry;
  const addr = hello.addrs[0]; // host:port; the only address used
  const colon = addr.lastIndexOf(':');

  // command_timeout_ms bounds the connect only: node-redis 4.5.1 has no
  // per-command (reply) timeout. Its commandOptions({signal}) withdraws a
  // command still queued, never one already written, so a command whose
  // reply does not come waits until the harness gives the request up (its
  // wait plus three command timeouts) and replaces the process: an unknown
  // outcome, as a node-redis user's would be.
  const socket = { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)) };
  if (hello.command_timeout_ms > 0) socket.connectTimeout = hello.command_timeout_ms;
  const client = createClient({
    socket,
    scripts: {
      releaseLock: defineScript({
        NUMBER_OF_KEYS: 1,
        SCRIPT: RELEASE,
        transformArguments: (key, token) => [key, token],
        transformReply: (reply) => reply,
      }),
    },
  });
  // Without a listener node-redis's 'error' event would end the process; a
  // failed command's own error is its outcome.
  client.on('error', (e) => process.stderr.write(`node-redis: ${describe(e)}\n`));
  // Not awaited: commands wait in node-redis's offline queue until it is
  // connected, and a cut link must not stall the hello.
  client.connect().catch((e) => process.stderr.write(`node-redis connect: ${describe(e)}\n`));

  // pause is the wait after the n-th failed attempt, as the hello's retry says.
  const pause = (n) => {
    const base = Math.min(retry.max_ms, retry.first_ms * 2 ** (n - 1));
    return base + random() * retry.jitter * base;
  };

  async function acquire(key, token) {
    const deadline = Date.now() + hello.wait_ms;
    for (let n = 1; ; n++) {
      await harness.step('attempt');
      let reply;
      try {
        reply = await client.set(key, token, { NX: true, PX: hello.ttl_ms });
      } catch (e) {
        return { outcome: 'unknown', error: describe(e) };
      }
      if (reply === 'OK') return { outcome: 'granted', token };
      const wait = pause(n);
      if (hello.wait_ms <= 0 || Date.now() + wait > deadline) return { outcome: 'not_acquired' };
      await sleep(wait);
    }
  }

  async function release(key, token) {
    await harness.step('release');
    try {
      const deleted = await client.releaseLock(key, token);
      return { outcome: deleted === 1 ? 'deleted' : 'not_deleted' };
    } catch (e) {
      return { outcome: 'unknown', error: describe(e) };
    }
  }

  // It dials the first master only: node-redis 4.5.1 has no Sentinel
  // client, and this lock follows no cluster redirects.
  await harness.serve('node-redis', redisVersion, { renewal: false, fencing: false, validity: false }, acquire, release,
    { topologies: TOPOLOGIES });
  process.exit(0); // stdin ended: the run is over (the client would keep Node alive)
}

main().catch((e) => {
  process.stderr.write(`node-redis lock program: ${describe(e)}\n`);
  process.exit(1);
});
