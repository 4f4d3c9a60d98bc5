// The program side of locktorture's lock protocol, versions 1 and 2, for Node.
//
// docs/lock-protocol.md is the spec; this file is its Node example, the twin
// of python/lockproto.py. A lock program opens a Harness (which reads the
// hello), then calls serve() with two async functions: one that acquires a
// key, one that releases it. Before each Redis command it sends, the lock
// awaits step(point): the step carries this process's CLOCK_MONOTONIC
// reading (process.hrtime.bigint()), and the promise resolves when the
// harness's "go" comes, or at once where the request did not ask for one
// (its await_go false: no fault may act there).
// Background renewals call renew() and renewed(). Only protocol lines go to
// stdout; anything else belongs on stderr.
//
// Version 2 (the harness's --share K) serves the K clients of one shared
// lock object in this one process: each client's requests run in order on
// a chain of that client's own, the chains side by side, as the threads of
// one application use one lock. Which request a step serves travels with
// the async work that serves it (AsyncLocalStorage), so step() needs no
// argument for it.
'use strict';

const readline = require('readline');
const { AsyncLocalStorage } = require('async_hooks');

const PROTOCOL = 1;
const SHARED = 2; // the version that serves several clients at once

class Harness {
  // open reads the harness's hello and resolves to a Harness.
  static open(input = process.stdin, output = process.stdout) {
    return new Promise((resolve, reject) => {
      const h = new Harness(input, output, resolve, reject);
      h._lines.on('line', (line) => h._read(line));
      h._lines.on('close', () => h._end());
    });
  }

  constructor(input, output, opened, failed) {
    this._out = output;
    this._lines = readline.createInterface({ input, terminal: false });
    this._opened = opened; // resolves open() once the hello is read
    this._failed = failed;
    this.hello = null;
    this._await = true; // the hello's await_go: wait for each go
    this._steps = 0;
    this._renewals = 0;
    this._goes = new Map(); // step number -> resolve of its promise
    this._requests = []; // requests read, not yet served
    this._wake = null; // resolves the server's wait for a request
    this._closed = false;
    this._serving = new AsyncLocalStorage(); // the request being served: {id, wait}
    this.shared = false; // version 2: several clients share this process
    this.clients = [];
  }

  // send writes one protocol line whole, in one write: Node runs one line
  // of JS at a time, so lines never interleave.
  send(msg) {
    this._out.write(JSON.stringify(msg) + '\n');
  }

  // step announces the next command to Redis and resolves when the harness
  // lets it go. request is the id of the request the command serves: the
  // one being served by default, 0 for background work such as a renewal.
  // A step of a request waits for its go where the request's await_go
  // asks it; one of no request (a renewal) always does.
  step(point, request) {
    const served = this._serving.getStore();
    if (request === undefined) request = served ? served.id : 0;
    const wait = request === 0 || !served || served.wait;
    const n = ++this._steps;
    const go = wait ? new Promise((resolve) => this._goes.set(n, resolve)) : Promise.resolve();
    // JSON.stringify has no BigInt: the reading goes in as its digits.
    const ns = process.hrtime.bigint().toString();
    this._out.write(JSON.stringify({ type: 'step', step: n, point, request }).slice(0, -1) + ',"mono_ns":' + ns + '}\n');
    return go.then(() => n);
  }

  // renew announces a background renewal; pass its number to renewed().
  renew(key, token) {
    const n = ++this._renewals;
    this.send({ type: 'renew', renewal: n, key, token });
    return n;
  }

  renewed(n, outcome, error = '') {
    const msg = { type: 'renewed', renewal: n, outcome };
    if (error) msg.error = error;
    this.send(msg);
  }

  // _read takes one line from the harness: the hello first, then goes
  // (which release a waiting step) and requests (queued for serve).
  _read(line) {
    if (!line.trim()) return;
    const msg = JSON.parse(line);
    if (this.hello === null) {
      if (msg.type !== 'hello') {
        this._failed(new Error('expected the harness\'s hello, got ' + line));
        return;
      }
      this.hello = msg;
      this._await = msg.await_go !== false; // a missing await_go means wait
      this.shared = msg.protocol === SHARED;
      this.clients = msg.clients || [msg.client || 0];
      this._opened(this);
    } else if (msg.type === 'go') {
      const resolve = this._goes.get(msg.step);
      this._goes.delete(msg.step);
      if (resolve) resolve();
    } else {
      this._requests.push(msg);
      this._poke();
    }
  }

  _end() {
    this._closed = true;
    if (this.hello === null) this._failed(new Error('stdin closed before the harness\'s hello'));
    this._poke();
  }

  _poke() {
    if (this._wake) {
      const wake = this._wake;
      this._wake = null;
      wake();
    }
  }

  // _next resolves to the next request, or null once stdin has ended.
  async _next() {
    while (this._requests.length === 0 && !this._closed) {
      await new Promise((resolve) => { this._wake = resolve; });
    }
    return this._requests.length > 0 ? this._requests.shift() : null;
  }

  // serve answers the hello, then serves requests until stdin ends: one at
  // a time in version 1, each client's in order on its own chain in
  // version 2. acquire(key, token) and release(key, token) resolve to the
  // reply's fields: {outcome: ...} and whatever else the outcome carries.
  // hello adds fields to the program's hello: key_template (the key the
  // lock writes, '{key}' standing for the one asked for) and topologies
  // (those the program serves).
  async serve(name, version, promises, acquire, release, hello = {}) {
    // skips_go: with await_go false this program sends at once, so the
    // harness need not send it those go lines at all.
    // monotonic: every step carries mono_ns, by which the harness dates a
    // lease whose command did not wait.
    this.send({ ...hello, type: 'hello', protocol: this.shared ? SHARED : PROTOCOL, name, version, promises, skips_go: true, monotonic: true });
    const chains = new Map(); // client -> the promise of its last request
    for (let req = await this._next(); req !== null; req = await this._next()) {
      if (!this.shared) {
        await this._answer(req, acquire, release);
        continue;
      }
      const client = req.client || 0;
      const last = chains.get(client) || Promise.resolve();
      chains.set(client, last.then(() => this._answer(req, acquire, release)));
    }
  }

  // _answer serves one request and sends its reply.
  _answer(req, acquire, release) {
    const wait = req.await_go === undefined ? this._await : req.await_go;
    return this._serving.run({ id: req.id, wait }, async () => {
      const serveIt = req.type === 'acquire' ? acquire : release;
      const reply = await serveIt(req.key, req.token);
      this.send({ ...reply, type: 'reply', id: req.id });
    });
  }
}
