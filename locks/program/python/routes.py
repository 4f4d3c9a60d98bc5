"""Where a Python lock program's connections go: the hello's addr_map.

Sentinels name the master, and a cluster its nodes, by their own
addresses; the harness's faults act on this client's proxies for them, so
every connection dials the address the hello maps an announced one to.
The harness runs this file after lockproto.py and before the program.
"""

import redis
import redis.sentinel


def hostport(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


class Mapped:
    """Dials the address the hello maps a server's announced one to.

    Sentinels name the master, and a cluster its nodes, by their own
    addresses; the harness's faults act on this client's proxies for them.
    Only the socket's target changes: host and port keep the announced
    address, by which redis-py's pools and slot tables know the node.
    """

    addr_map = {}  # set once from the hello: set_addr_map

    def _connect(self):
        announced = self.host, self.port
        target = self.addr_map.get("%s:%s" % announced, "%s:%s" % announced)
        self.host, self.port = hostport(target)
        try:
            return super()._connect()
        finally:
            self.host, self.port = announced


class MappedConnection(Mapped, redis.Connection):
    pass


class MappedSentinelConnection(Mapped, redis.sentinel.SentinelManagedConnection):
    pass


def set_addr_map(hello):
    """Maps every announced address as the hello says."""
    Mapped.addr_map = hello.get("addr_map") or {}
