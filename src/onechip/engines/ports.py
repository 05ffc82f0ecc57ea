"""Who holds a TCP port on this host, from the kernel's own tables (Linux): /proc/net/tcp and tcp6 (proc(5)) for the
sockets that listen or carry a connection, the sock_diag netlink dump for sockets bound that do not listen yet (which
/proc/net/tcp never lists), and /proc/<pid>/fd for the process that holds a socket.

Why it matters: vLLM binds its HTTP port before it sets the engine up and listens only once the engine is up
(vllm/entrypoints/launchers/launcher.py setup_server, vLLM 0.32), with SO_REUSEADDR; a second server binding with
SO_REUSEADDR is allowed beside it while it does not listen (net/ipv4/inet_connection_sock.c inet_bind_conflict), so a
port check by bind alone took a booting engine's port for free, and a /health answer on a port for one's own engine.
Elsewhere than Linux (no /proc/net/tcp) every reader here returns None: the callers say what they cannot tell.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

from onechip.errors import redact
from onechip.procs import group_tree, pids

# TCP states as the kernel numbers them (include/net/tcp_states.h), the 'st' column of /proc/net/tcp in hex
TIME_WAIT = 0x06
LISTEN = 0x0A
_BOUND_INACTIVE = 13  # TCP_BOUND_INACTIVE: sock_diag's pseudo-state for sockets bound, not listening (Linux 6.8+)

_NETLINK_SOCK_DIAG = 4  # include/uapi/linux/netlink.h NETLINK_SOCK_DIAG
_SOCK_DIAG_BY_FAMILY = 20  # include/uapi/linux/sock_diag.h
_NLM_F_REQUEST_DUMP = 0x1 | 0x300  # include/uapi/linux/netlink.h NLM_F_REQUEST | NLM_F_DUMP
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NLMSG_HDR = struct.Struct("=IHHII")  # struct nlmsghdr: len, type, flags, seq, pid
# struct inet_diag_req_v2 (include/uapi/linux/inet_diag.h): family, protocol, ext, pad, states, then a 48-byte sockid
_DIAG_REQ = struct.Struct("=BBBBI48x")
# struct inet_diag_msg: family, state, timer, retrans, sockid (sport and dport big-endian, src[16], dst[16], if,
# cookie[2]), expires, rqueue, wqueue, uid, inode
_DIAG_MSG = struct.Struct("=BBBB2s2x16s16x4x8xIIIII")


@dataclass(frozen=True)
class TcpSocket:
    """One TCP socket of this host: its local address and port, kernel state (TIME_WAIT, LISTEN, ...), owner uid and
    inode (what /proc/<pid>/fd/N links to as 'socket:[inode]')."""

    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int
    state: int
    uid: int
    inode: int

    def on(self, port: int, host: str) -> bool:
        """Whether a server binding `host`:`port` meets this socket: same port, and this address or `host` is the
        wildcard, or `host` is this address (an IPv4-mapped IPv6 address as its IPv4 one), as the kernel's
        inet_rcv_saddr_equal matches them."""
        if self.port != port:
            return False
        address = self.address
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        with contextlib.suppress(ValueError):
            wanted = ipaddress.ip_address(host)
            return address.is_unspecified or wanted.is_unspecified or address == wanted
        return True  # a host name: any address may be it


def _address(hex_words: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """/proc/net/tcp's address: each 32-bit word printed as %08X of the value in host byte order."""
    raw = b"".join(struct.pack("=I", int(hex_words[i : i + 8], 16)) for i in range(0, len(hex_words), 8))
    return ipaddress.ip_address(raw)


def tcp_table() -> list[TcpSocket] | None:
    """Every TCP socket /proc/net/tcp and /proc/net/tcp6 list (those that listen or carry a connection, TIME_WAIT
    included; proc(5)); None when /proc/net/tcp cannot be read."""
    rows: list[TcpSocket] = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii") as table:
                lines = table.read().splitlines()[1:]
        except OSError:
            if name.endswith("tcp"):
                return None
            continue  # a kernel without IPv6
        for line in lines:
            fields = line.split()
            address, port = fields[1].split(":")
            rows.append(TcpSocket(_address(address), int(port, 16), int(fields[3], 16), int(fields[7]), int(fields[9])))
    return rows


def bound_not_listening() -> list[TcpSocket] | None:
    """The TCP sockets bound to a port that neither listen nor connect (TCP_BOUND_INACTIVE: what `ss --bound-inactive`
    shows, Linux 6.8 on; an older kernel answers none); None when sock_diag cannot be asked (not Linux)."""
    rows: list[TcpSocket] = []
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as netlink:
            netlink.settimeout(2.0)  # the kernel ends a dump with NLMSG_DONE; a reply that never comes is no answer
            for family in (socket.AF_INET, socket.AF_INET6):
                request = _DIAG_REQ.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << _BOUND_INACTIVE)
                netlink.sendto(_NLMSG_HDR.pack(_NLMSG_HDR.size + len(request), _SOCK_DIAG_BY_FAMILY,
                                               _NLM_F_REQUEST_DUMP, family, 0) + request, (0, 0))  # fmt: skip
                rows += _diag_replies(netlink, family)
    except (OSError, AttributeError):  # OSError: no tcp_diag module (ENOENT), a timeout; AttributeError: no AF_NETLINK
        return None
    return rows


def _diag_replies(netlink: socket.socket, family: int) -> list[TcpSocket]:
    rows: list[TcpSocket] = []
    while True:
        data, offset = netlink.recv(65536), 0
        while offset + _NLMSG_HDR.size <= len(data):
            length, kind = _NLMSG_HDR.unpack_from(data, offset)[:2]
            if kind == _NLMSG_DONE:
                return rows
            if kind == _NLMSG_ERROR:
                raise OSError(-struct.unpack_from("=i", data, offset + _NLMSG_HDR.size)[0], "sock_diag refused")
            _, state, _, _, port, source, _, _, _, uid, inode = _DIAG_MSG.unpack_from(data, offset + _NLMSG_HDR.size)
            raw = source[:4] if family == socket.AF_INET else source
            rows.append(TcpSocket(ipaddress.ip_address(raw), int.from_bytes(port, "big"), state, uid, inode))
            offset += (length + 3) & ~3
        if not data:
            return rows


def bound_unlistened(port: int, host: str) -> bool:
    """Whether a socket on `host`:`port` is bound and does not listen, when a bind without SO_REUSEADDR failed there
    and one with it did not: a server that has bound its port and not yet listened (vLLM booting), or only the
    connections a stopped server left (TIME_WAIT and its kin, which its successor may bind beside). The kernel's
    bound-only dump says which; where it has none (before Linux 6.8), a port /proc/net/tcp lists no socket on is held
    by a socket /proc does not list: a bound one. Without /proc (not Linux): False, as the bind said."""
    bound = bound_not_listening()
    if bound and any(row.on(port, host) for row in bound):
        return True
    table = tcp_table()
    return table is not None and not any(row.on(port, host) for row in table)


def _sockets_of(pid: int | str) -> set[int] | None:
    """The inodes of the sockets process `pid` holds open (/proc/<pid>/fd links 'socket:[N]'); None when its fd folder
    cannot be read (another user's process, or gone)."""
    inodes: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    return inodes


@dataclass(frozen=True)
class Listeners:
    """The LISTEN sockets on one port: how many an engine's processes hold (`ours`), those they do not (`others`),
    and whether a process of the engine could not be looked into (`blind`: another user's, as under a sudo launcher),
    so that a listener among `others` may be its own."""

    ours: int
    others: list[TcpSocket]
    blind: bool


def listeners(port: int, host: str, pgid: int) -> Listeners | None:
    """The sockets listening where a server on `host`:`port` answers, split into those the processes of group `pgid`
    and their descendants hold (procs.group_tree) and the others; None when /proc/net/tcp cannot be read (not Linux)."""
    table = tcp_table()
    tree = group_tree(pgid)
    if table is None or tree is None:
        return None
    listening = [row for row in table if row.state == LISTEN and row.on(port, host)]
    held = [_sockets_of(pid) for pid in tree]
    mine = set().union(*(inodes for inodes in held if inodes is not None))
    return Listeners(
        ours=sum(row.inode in mine for row in listening),
        others=[row for row in listening if row.inode not in mine],
        blind=any(inodes is None for inodes in held),
    )


def holder(sock: TcpSocket, width: int = 120) -> str:
    """Who holds `sock`, in words: 'pid N (its command line, redacted, at most `width` characters)', or, where no
    /proc/<pid>/fd this user may read holds it (another user's process), 'a process of uid N'."""
    for pid in pids() or []:
        if sock.inode in (_sockets_of(pid) or ()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    words = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                words = ""
            words = redact(words)
            words = words if len(words) <= width else words[: width - 3] + "..."
            return f"pid {pid} ({words or 'command line not readable'})"
    return f"a process of uid {sock.uid}"
