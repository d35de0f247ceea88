#!/usr/bin/env python3
"""Going live on a platform, measured (make bench, issue 46), with Debian's nginx and
libnginx-mod-rtmp standing for the platform's ingest on loopback.

1. What a destination costs: onair's CPU (cores busy) in real time at 720p30 on the
   synthetic camera with 0, 1 and 3 RTMP destinations, 20 s each; the goal is at most
   +3 % of a core for each.
2. From the press to the platform: `stream.started` to `destination.live` (connected,
   handshaken, publishing) in onair's own log, over several starts.
3. Reconnecting: after the connection is cut (a TCP proxy in front of nginx drops it),
   from `destination.failed` to `destination.live` again (the first retry waits 1 s).
4. Glass-to-glass through nginx-rtmp: ffmpeg's low-delay decoder playing the stream back
   from nginx (rtmp://…/live/NAME, as a platform's player would fetch it), each picture's
   index band read as it arrives; against the same camera through RTSP on the same run
   (bench_rtsp.py's reader), median and 95th percentile.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from bench_latency import cpu_seconds, percentiles
from bench_rtsp import arrivals

ONAIR = os.environ.get("ONAIR_BINARY", ".build/release/onair")
SECONDS = int(os.environ.get("ONAIR_LATENCY_SECONDS", "60"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx-rtmp on a free loopback port, `live` taking any stream name and playing it back."""

    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="onair-bench-rtmp-")
        self.port = free_port()
        with open(os.path.join(self.work, "nginx.conf"), "w") as f:
            f.write(f"""load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off; master_process off; user root; pid {self.work}/nginx.pid; error_log {self.work}/error.log;
events {{ worker_connections 256; }}
rtmp {{ server {{ listen 127.0.0.1:{self.port}; application live {{ live on; }} }} }}
""")
        self.process = subprocess.Popen(["nginx", "-c", os.path.join(self.work, "nginx.conf"), "-e", os.path.join(self.work, "error.log")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx-rtmp did not start")

    def stop(self):
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


class Proxy:
    """A TCP proxy whose `cut()` ends every connection through it."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.sockets = []

    def stop(self):
        self.cut()
        self.listener.close()


def run_onair(work, settings, duration=None):
    argv = [ONAIR, "run", "--source", "synthetic", "--out", os.path.join(work, "out"), "--listen", "off", "--log-format", "json",
            "--set", "webrtc.port=off"] + [a for s in settings for a in ("--set", s)]
    if duration:
        argv += ["--duration", str(duration)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def events(onair, wanted, until, timeout=60):
    """(t_ms, event) of the events named in `wanted` from onair's JSON log, until one named
    `until` (or the timeout)."""
    found = []
    deadline = time.time() + timeout
    for line in onair.stderr:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") in wanted:
            found.append((float(event.get("t_ms", 0)), event))
        if event.get("event") == until or time.time() > deadline:
            break
    return found


def cpu_by_destinations(nginx, seconds=20):
    out = {}
    for count in (0, 1, 3):
        work = tempfile.mkdtemp(prefix="onair-bench-dest-")
        settings = [f"destination.d{n}.url=rtmp://127.0.0.1:{nginx.port}/live/cpu{n}" for n in range(count)]
        onair = run_onair(work, settings)
        try:
            live = events(onair, ("destination.live",), "segment.stored" if count == 0 else "destination.live")
            if count > 1:
                while len(live) < count:
                    more = events(onair, ("destination.live",), "destination.live", timeout=30)
                    if not more:
                        break
                    live += more
            threading.Thread(target=lambda: [None for _ in onair.stderr], daemon=True).start()
            time.sleep(3)
            start = cpu_seconds(onair.pid)
            time.sleep(seconds)
            out[count] = (cpu_seconds(onair.pid) - start) / seconds
        finally:
            onair.terminate()
            onair.wait()
            shutil.rmtree(work, ignore_errors=True)
    return out


def press_to_live(nginx, runs=5):
    times = []
    for n in range(runs):
        work = tempfile.mkdtemp(prefix="onair-bench-press-")
        onair = run_onair(work, [f"destination.p.url=rtmp://127.0.0.1:{nginx.port}/live/press{n}"], duration=4)
        try:
            found = dict((e["event"], t) for t, e in events(onair, ("stream.started", "destination.live"), "destination.live"))
            if "stream.started" in found and "destination.live" in found:
                times.append(found["destination.live"] - found["stream.started"])
        finally:
            onair.terminate()
            onair.wait()
            shutil.rmtree(work, ignore_errors=True)
    return times


def reconnects(nginx, cuts=3):
    proxy = Proxy(nginx.port)
    work = tempfile.mkdtemp(prefix="onair-bench-cut-")
    onair = run_onair(work, [f"destination.c.url=rtmp://127.0.0.1:{proxy.port}/live/cut"])
    times = []
    try:
        events(onair, ("destination.live",), "destination.live")
        for _ in range(cuts):
            time.sleep(6)  # live long enough to have been working: the first retry, 1 s
            proxy.cut()
            found = events(onair, ("destination.failed", "destination.live"), "destination.live", timeout=30)
            failed = [t for t, e in found if e["event"] == "destination.failed"]
            live = [t for t, e in found if e["event"] == "destination.live"]
            if failed and live:
                times.append(live[-1] - failed[0])
    finally:
        onair.terminate()
        onair.wait()
        proxy.stop()
        shutil.rmtree(work, ignore_errors=True)
    return times


def glass_to_glass(nginx, seconds):
    """Through nginx-rtmp (published by onair, played back by ffmpeg's low-delay decoder)."""
    work = tempfile.mkdtemp(prefix="onair-bench-g2g-")
    onair = run_onair(work, [f"destination.g.url=rtmp://127.0.0.1:{nginx.port}/live/g2g"])
    latencies = []
    try:
        found = {}
        for line in onair.stderr:
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "source.started":
                found["frame0_ms"], found["fps"] = event["frame0_wall_ms"], event["fps"]
            if event.get("event") == "destination.live":
                break
        threading.Thread(target=lambda: [None for _ in onair.stderr], daemon=True).start()
        latencies = arrivals(["-i", f"rtmp://127.0.0.1:{nginx.port}/live/g2g"], found["frame0_ms"], found["fps"], seconds)
    finally:
        onair.terminate()
        onair.wait()
        shutil.rmtree(work, ignore_errors=True)
    return latencies


def report():
    nginx = Nginx()
    try:
        print("Going live (nginx-rtmp on loopback standing for a platform's ingest), 720p30 synthetic camera")
        cpu = cpu_by_destinations(nginx)
        if cpu.get(0):
            print("  onair's CPU (cores busy) with RTMP destinations: " + ", ".join(f"{n}: {used:.3f}" for n, used in cpu.items()))
            print(f"      each destination adds {(cpu[1] - cpu[0]) * 100:.1f} % of a core (1), "
                  f"{(cpu[3] - cpu[0]) / 3 * 100:.1f} % (3); goal <= 3 %")
        times = press_to_live(nginx)
        if times:
            median, p95 = percentiles(times)
            print(f"  from the stream's start to the server publishing it: median {median:.0f} ms, worst {max(times):.0f} ms ({len(times)} starts)")
        times = reconnects(nginx)
        if times:
            median, _ = percentiles(times)
            print(f"  reconnect after a cut: median {median:.0f} ms ({len(times)} cuts; the first retry waits 1 s)")
        latencies = glass_to_glass(nginx, SECONDS)
        if len(latencies) >= 10:
            median, p95 = percentiles(latencies)
            print(f"  glass-to-glass through nginx-rtmp into ffmpeg's low-delay decoder: median {median * 1000:.0f} ms, "
                  f"95th percentile {p95 * 1000:.0f} ms ({len(latencies)} pictures; RTSP's on this run above)")
        else:
            print(f"  glass-to-glass through nginx-rtmp: too few pictures read ({len(latencies)})")
    finally:
        nginx.stop()


if __name__ == "__main__":
    report()
    sys.exit(0)
