#!/usr/bin/env python3
"""Slow and idle clients against a running desk, on loopback only.

Measures what other clients see while many sockets hold the desk: the p50 and p95 of
`GET /report` and `GET /desk` from an address no holder uses, first idle, then with N sockets
that send a request's headers one byte at a time (slow) or nothing at all (idle), held
from one address and again spread over 200 addresses (127.0.0.x). Prints one line a
measurement; stops by itself (every phase is bounded in count and time) and closes every
socket it opened.

    scripts/bench-slow-clients.py --base http://127.0.0.1:3000 [--sockets 2000]

Only loopback addresses are accepted.
"""

import argparse
import http.client
import socket
import statistics
import sys
import threading
import time
import urllib.parse

PROBE_ADDRESS = "127.0.0.250"


def probe(host, port, path, count):
    """Latencies (ms) of `count` sequential GETs of `path` from PROBE_ADDRESS."""
    times = []
    failures = 0
    for _ in range(count):
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(
                host, port, timeout=10, source_address=(PROBE_ADDRESS, 0)
            )
            conn.request("GET", path)
            conn.getresponse().read()
            conn.close()
            times.append((time.perf_counter() - started) * 1000)
        except OSError:
            failures += 1
    return times, failures


def summary(times):
    if not times:
        return "no answer"
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms"


class Holders:
    """`count` sockets from `addresses`, slow (a header byte every second) or idle."""

    def __init__(self, host, port, addresses, count, slow):
        self.sockets = []
        self.refused = 0
        self.stop = threading.Event()
        for n in range(count):
            address = addresses[n % len(addresses)]
            try:
                s = socket.create_connection((host, port), timeout=2, source_address=(address, 0))
                self.sockets.append(s)
            except OSError:
                self.refused += 1
        self.slow = slow
        self.thread = threading.Thread(target=self.drip, daemon=True)
        self.thread.start()

    def drip(self):
        request = b"GET /report HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
        offset = 0
        while not self.stop.is_set() and self.slow:
            for s in list(self.sockets):
                try:
                    s.send(request[offset % len(request):offset % len(request) + 1])
                except OSError:
                    pass
            offset += 1
            self.stop.wait(1.0)

    def closed_by_desk(self):
        """How many of the sockets the desk has closed (refused over a cap, or timed out)."""
        closed = 0
        for s in self.sockets:
            try:
                s.setblocking(False)
                if s.recv(1, socket.MSG_PEEK) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            finally:
                try:
                    s.setblocking(True)
                except OSError:
                    pass
        return closed

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:3000")
    parser.add_argument("--sockets", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--hold", type=float, default=3.0, help="seconds before probing")
    args = parser.parse_args()
    url = urllib.parse.urlparse(args.base)
    host, port = url.hostname, url.port or 80
    if not (host == "localhost" or host.startswith("127.")):
        sys.exit("only a loopback desk is measured")
    if not 1 <= args.sockets <= 5000 or not 1 <= args.probes <= 500:
        sys.exit("--sockets 1 to 5000, --probes 1 to 500")
    spread = [f"127.0.0.{n}" for n in range(1, 201)]
    print(f"desk {args.base}; probes from {PROBE_ADDRESS}, {args.probes} each")
    baseline = {}
    for path in ["/report", "/desk"]:
        times, failed = probe(host, port, path, args.probes)
        baseline[path] = statistics.median(times) if times else None
        print(f"idle: GET {path}: {summary(times)}, {failed} failed")
    for slow in [False, True]:
        for label, addresses in [("one address", ["127.0.0.1"]), ("200 addresses", spread)]:
            holders = Holders(host, port, addresses, args.sockets, slow)
            time.sleep(args.hold)
            kind = "slow" if slow else "idle"
            closed = holders.closed_by_desk()
            for path in ["/report", "/desk"]:
                times, failed = probe(host, port, path, args.probes)
                ratio = (
                    f", {statistics.median(times) / baseline[path]:.2f}x idle p50"
                    if times and baseline[path]
                    else ""
                )
                print(
                    f"{args.sockets} {kind} sockets from {label} ({len(holders.sockets)} connected, "
                    f"{closed} closed by the desk, {holders.refused} not connected): "
                    f"GET {path}: {summary(times)}{ratio}, {failed} failed"
                )
            holders.close()
            time.sleep(1.0)


if __name__ == "__main__":
    main()
