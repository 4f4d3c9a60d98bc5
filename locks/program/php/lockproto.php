<?php
// The program side of locktorture's lock protocol, version 1, for PHP.
//
// docs/lock-protocol.md is the spec; this file is its PHP example, the twin
// of python/lockproto.py. A lock program builds a Harness (which reads the
// hello), then calls serve() with two callables: one that acquires a key,
// one that releases it, each returning the reply's fields. Before each Redis
// command it sends, the lock calls step($point): the step carries this
// process's CLOCK_MONOTONIC reading (hrtime(true)), and returns when the
// harness's "go" comes, or at once where the request did not ask for one
// (its await_go false: no fault may act there). PHP runs one request at a time, so the program
// speaks version 1 only (no --share). Only protocol lines go to stdout;
// anything else belongs on stderr.

final class Harness
{
    /** @var array the harness's hello */
    public $hello;
    private $in;
    private $out;
    private $steps = 0;
    private $await = true; // the hello's await_go: a request's default
    private $awaitReq = true; // the request being served: its await_go
    private $request = 0;

    public function __construct()
    {
        $this->in = fopen('php://stdin', 'r');
        $this->out = fopen('php://stdout', 'w');
        $line = fgets($this->in);
        $hello = $line === false ? null : json_decode($line, true);
        if (!is_array($hello) || ($hello['type'] ?? '') !== 'hello') {
            fwrite(STDERR, 'expected the harness\'s hello, got ' . var_export($line, true) . "\n");
            exit(1);
        }
        $this->hello = $hello;
        $this->await = $hello['await_go'] ?? true;
    }

    // send writes one protocol line whole.
    public function send(array $msg): void
    {
        fwrite($this->out, json_encode($msg, JSON_UNESCAPED_SLASHES) . "\n");
        fflush($this->out);
    }

    // step announces the next command to Redis and returns when the harness
    // lets it go; lines other than its go are not expected in version 1.
    public function step(string $point): void
    {
        $n = ++$this->steps;
        $this->send(['type' => 'step', 'step' => $n, 'point' => $point, 'request' => $this->request,
            'mono_ns' => hrtime(true)]);
        if ($this->request !== 0 && !$this->awaitReq) {
            return;
        }
        while (($msg = $this->next()) !== null) {
            if (($msg['type'] ?? '') === 'go' && ($msg['step'] ?? 0) === $n) {
                return;
            }
        }
        exit(0); // stdin closed: the run is over
    }

    private function next(): ?array
    {
        $line = fgets($this->in);
        if ($line === false) {
            return null;
        }
        $msg = json_decode($line, true);
        return is_array($msg) ? $msg : null;
    }

    // serve answers the hello, then serves requests until stdin ends.
    // $hello adds fields to the program's hello (key_template, topologies).
    public function serve(string $name, string $version, array $promises, callable $acquire, callable $release, array $hello = []): void
    {
        $this->send(array_merge($hello, ['type' => 'hello', 'protocol' => 1, 'name' => $name, 'version' => $version,
            'promises' => (object) $promises, 'skips_go' => true, 'monotonic' => true]));
        while (($req = $this->next()) !== null) {
            $type = $req['type'] ?? '';
            if ($type !== 'acquire' && $type !== 'release') {
                continue; // a go nobody waited for
            }
            $this->request = $req['id'];
            $this->awaitReq = $req['await_go'] ?? $this->await;
            $reply = $type === 'acquire' ? $acquire($req['key'], $req['token']) : $release($req['key'], $req['token']);
            $this->request = 0;
            $this->send(array_merge($reply, ['type' => 'reply', 'id' => $req['id']]));
        }
    }
}
