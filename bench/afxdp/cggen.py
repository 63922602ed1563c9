#!/usr/bin/env python3
"""cggen.py IFACE DSTMAC FRAMES BURST [GAP_S]: the traffic of bench/afxdpcg.sh.

Sends FRAMES ICMP echo requests (58 bytes, 10.77.0.1 -> 10.77.0.2) to DSTMAC out of IFACE
through AF_PACKET, BURST of them back to back (BURST "ping" is 1), waits after each burst
until all of it is back (a reflector sends the request back with the MACs swapped: an
echo request with our id and sequence; the kernel's echo replies do not count) or GEN_TIMEOUT seconds
(default 1) passed, then sleeps GAP_S (default 0.001). Prints "sent back"."""
import os
import select
import socket
import struct
import sys
import time

ifname, dstmac, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
gap = float(sys.argv[5]) if len(sys.argv) > 5 else 0.001
burst = 1 if mode == "ping" else int(mode)
timeout = float(os.environ.get("GEN_TIMEOUT", "1"))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((ifname, 0x0800))
src = s.getsockname()[4]
dst = bytes.fromhex(dstmac.replace(":", ""))
ident = os.getpid() & 0xFFFF


def csum(b):
    if len(b) % 2:
        b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF


def frame(seq):
    ic = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"uiod-afxdp-bench"
    ic = ic[:2] + struct.pack("!H", csum(ic)) + ic[4:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(ic), seq, 0, 64, 1, 0, bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dst + src + b"\x08\x00" + ip + ic


sent = back = seq = 0
while sent < n:
    want = set()
    for _ in range(min(burst, n - sent)):
        seq = seq % 0xFFFF + 1
        s.send(frame(seq))
        want.add(seq)
        sent += 1
    end = time.monotonic() + timeout
    while want:
        left = end - time.monotonic()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            break
        b, addr = s.recvfrom(2048)
        if addr[2] == socket.PACKET_OUTGOING or len(b) < 42 or b[23] != 1 or b[34] != 8:
            continue
        i, q = struct.unpack("!HH", b[38:42])
        if i == ident and q in want:
            want.discard(q)
            back += 1
    if gap > 0:
        time.sleep(gap)
print(sent, back)
