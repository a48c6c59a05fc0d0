"""Each broker on a host of its own: one Linux network namespace per node, so a partition cuts
everything a node says -- clients, replication, the controller quorum -- the way a network does.

    hosts = Hosts([1, 2, 3]).create()       # needs root and iproute2 (`ip`)
    hosts.address(2)                        # 10.213.X.3: node 2's only address
    hosts.wrap(["java", ...])               # the command run inside node 2's namespace
    hosts.drop(1, 2)                        # packets from node 1 to node 2 are dropped
    hosts.heal(); hosts.remove()

The layout: a bridge in the root namespace holds this process's addresses (10.213.X.254: the
clients and the runner; 10.213.X.253: a controller the runner runs, kafkaref's), and one veth
pair per node leads to its namespace, where node n has 10.213.X.<n+1> on its eth0. Nothing
leaves the machine: the subnet is routed only to the bridge.

A cut is a blackhole route: `drop(a, b)` adds `blackhole <b>/32` in a's namespace, so every
packet a sends to b is dropped at a (new connections fail at once, established ones hear
nothing and retransmit until healed), which is what Jepsen's iptables DROP rules do; a cut both
ways is drop(a, b) and drop(b, a). This kernel has no iptables, nftables or tc netem: delays
cannot be made, and a cut is per address, not per connection direction.

Everything made is named after this process (kafkaref-<pid>-n<id>, bridge krb<pid>, veths
krv<pid>n<id>), removed by remove() (a run calls it in a finally), and anything left by a process
that no longer exists (one killed with SIGKILL) is removed by the next create().
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess

PREFIX = "kafkaref-"
SUBNET_BASE = ipaddress.ip_network("10.213.0.0/16")  # a /24 of it per set of hosts
# Ids of the root namespace's two addresses on the bridge, which node ids stay below: the
# clients and the runner, and a controller running in the runner's process (kafkaref's).
HOST_ID, CONTROLLER_ID = 254, 253
IP_TIMEOUT_S = 20


class NetnsError(RuntimeError):
    """The namespaces could not be made or changed (no root, no iproute2, a kernel refusal)."""


def unavailable() -> str | None:
    """Why per-node network namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "partitions need iproute2's `ip` (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "partitions need root: network namespaces and veth pairs are made with `ip netns`"
    return None


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, check=False)
    if check and done.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()[:300]}")
    return done


class Hosts:
    """One network namespace per node id on a bridge of our own; see the module's docstring."""

    def __init__(self, node_ids: list[int], owner: int | None = None):
        if not node_ids or min(node_ids) < 0 or max(node_ids) >= CONTROLLER_ID - 1:
            raise ValueError(f"node ids must be in 0..{CONTROLLER_ID - 2}: {node_ids}")
        self.node_ids = list(node_ids)
        self.owner = os.getpid() if owner is None else owner
        self.bridge = f"krb{self.owner}"
        self.subnet: ipaddress.IPv4Network | None = None
        self.dropped: set[tuple[str, str]] = set()  # blackhole routes: (namespace, address)
        self.made = False

    def namespace(self, node_id: int) -> str:
        return f"{PREFIX}{self.owner}-n{node_id}"

    def _veth(self, node_id: int) -> str:
        return f"krv{self.owner}n{node_id}"

    def address(self, node_id: int) -> str:
        """Node node_id's address (.1 is node 0); HOST_ID and CONTROLLER_ID: the root side's."""
        return str(self.subnet[node_id if node_id in (HOST_ID, CONTROLLER_ID) else node_id + 1])

    @property
    def host_address(self) -> str:
        """This process's address on the bridge: where the nodes see clients come from."""
        return self.address(HOST_ID)

    @property
    def controller_address(self) -> str:
        """A second address of this process on the bridge, for a controller it runs: cut apart
        from the clients' (a node can lose its controller and still serve clients)."""
        return self.address(CONTROLLER_ID)

    def wrap(self, node_id: int, command: list[str]) -> list[str]:
        """command run inside node_id's namespace (`ip netns exec` execs it: same pid)."""
        return ["ip", "netns", "exec", self.namespace(node_id), *command]

    # -- making and removing -------------------------------------------------------------------
    def create(self) -> Hosts:
        why = unavailable()
        if why:
            raise NetnsError(why)
        remove_orphans()
        self.subnet = _free_subnet()
        self.made = True
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            ip("addr", "add", f"{self.host_address}/24", "dev", self.bridge)  # primary: clients
            ip("addr", "add", f"{self.controller_address}/24", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
            for node_id in self.node_ids:
                self._add_node(node_id)
        except BaseException:
            self.remove()
            raise
        return self

    def _add_node(self, node_id: int) -> None:
        namespace, veth = self.namespace(node_id), self._veth(node_id)
        ip("netns", "add", namespace)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        ip("-n", namespace, "addr", "add", f"{self.address(node_id)}/24", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", namespace, "link", "set", "lo", "up")

    def remove(self) -> None:
        """Every namespace, veth and the bridge made for these hosts (safe to call twice)."""
        if not self.made:
            return
        remove_owned(self.owner)
        self.dropped.clear()
        self.made = False

    def __enter__(self) -> Hosts:
        return self.create()

    def __exit__(self, *exc) -> None:
        self.remove()

    # -- cutting -------------------------------------------------------------------------------
    def drop(self, source: int, target: int) -> None:
        """Drop every packet source sends to target; either may be HOST_ID or CONTROLLER_ID,
        the root side."""
        route = self._route_of(source, target)
        if route not in self.dropped:
            ip("-n", route[0], "route", "add", "blackhole", f"{route[1]}/32")
            self.dropped.add(route)

    def _route_of(self, source: int, target: int) -> tuple[str, str]:
        """(namespace, destination) of the blackhole route for source -> target. The root
        namespace is shared with other work, so it gets no routes: the root side is cut from
        node n by dropping n's packets to it (a TCP connection needs both ways)."""
        if source in (HOST_ID, CONTROLLER_ID):
            return self.namespace(target), self.address(source)
        return self.namespace(source), self.address(target)

    def heal(self) -> None:
        """Remove every cut."""
        for namespace, destination in sorted(self.dropped):
            ip("-n", namespace, "route", "del", "blackhole", f"{destination}/32", check=False)
        self.dropped.clear()


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of SUBNET_BASE that no interface of the root namespace is on."""
    routes = ip("-4", "route", "show", "table", "all").stdout + ip("-4", "addr").stdout
    taken = {ipaddress.ip_network(m, strict=False)
             for m in re.findall(r"(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", routes)}
    candidates = list(SUBNET_BASE.subnets(new_prefix=24))
    start = os.getpid() % len(candidates)
    for subnet in candidates[start:] + candidates[:start]:
        if subnet.network_address.packed[2] in (0, 255):
            continue
        if not any(subnet.overlaps(t) for t in taken if t.prefixlen > 0):
            return subnet
    raise NetnsError(f"no free /24 left in {SUBNET_BASE}")


def remove_owned(owner: int) -> None:
    """Remove the namespaces and the bridge of owner (its veths go with the namespaces)."""
    for namespace in namespaces():
        if namespace.startswith(f"{PREFIX}{owner}-"):
            ip("netns", "del", namespace, check=False)
    ip("link", "del", f"krb{owner}", check=False)


def remove_orphans() -> None:
    """Namespaces and bridges left by processes that are gone (a run killed with SIGKILL)."""
    owners = {int(m.group(1)) for name in namespaces()
              if (m := re.match(rf"{PREFIX}(\d+)-n\d+$", name))}
    owners |= {int(m) for m in re.findall(r"\d+: krb(\d+)[:@]", ip("-o", "link").stdout)}
    for owner in owners:
        if not _alive(owner):
            remove_owned(owner)


def namespaces() -> list[str]:
    done = ip("netns", "list", check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
