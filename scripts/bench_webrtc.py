"""make bench, part 9: how soon a WebRTC viewer sees its first picture, and what the
pictures made for viewers cost (issue 45).

aiortc (make test's .build/webrtc venv) opens /whep 20 times at random moments against a
live synthetic stream; each opening's time from the answer to its first decoded picture
is kept, and the median and 95th percentile are printed, with how many IDRs the live
encoder made for viewers (stream.ended's idrs_for_viewers).

Then the bit rate of a minute of the live stream without viewers and with 10 viewers
joining at random moments in it (each IDR made for a viewer is a picture that costs what
an IDR costs): stream.ended's bytes over its duration, both runs on the same synthetic
pictures.
"""
import json
import os
import random
import re
import socket
import subprocess
import tempfile
import time

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(PACKAGE, ".build", "webrtc", "bin", "python3")
CLIENT = os.path.join(PACKAGE, "Tests", "IntegrationTests", "Clients", "whep_client.py")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(onair, port, work):
    log = open(os.path.join(work, "onair.log"), "w+")
    server = subprocess.Popen([onair, "run", "--source", "synthetic", "--set", "record.enabled=off", "--set", "webrtc.port=0",
                               "--listen", f"127.0.0.1:{port}", "--out", os.path.join(work, "out")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    return server, log


def ended(log):
    """The last stream.ended line's bit rate (bits/s) and IDRs made for viewers."""
    log.seek(0)
    lines = re.findall(r"event=stream\.ended [^\n]*", log.read())
    if not lines:
        return None, None
    fields = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    seconds = float(fields.get("duration", "0") or 0)
    rate = int(fields.get("bytes", "0")) * 8 / seconds if seconds > 0 else None
    return rate, int(fields.get("idrs_for_viewers", "0"))


def bitrate_cost(onair, seconds=60, joins=10):
    """The live stream's bit rate alone and with `joins` viewers joining in `seconds`."""
    if not os.access(PYTHON, os.X_OK):
        return
    results = []
    for viewers in (0, joins):
        port = free_port()
        work = tempfile.mkdtemp(prefix="onair-bench-idr-")
        server, log = start(onair, port, work)
        try:
            began = time.monotonic()
            rng = random.Random(viewers)
            moments = sorted(rng.uniform(2.0, seconds - 2.0) for _ in range(viewers))
            for moment in moments:
                time.sleep(max(0.0, began + moment - time.monotonic()))
                subprocess.run([PYTHON, CLIENT, f"http://127.0.0.1:{port}/whep", "1"], capture_output=True, text=True, timeout=60)
            time.sleep(max(0.0, began + seconds - time.monotonic()))
        finally:
            server.terminate()
            server.wait()
        results.append(ended(log))
    (alone, _), (watched, forced) = results
    if not alone or not watched:
        print("live bit rate with viewers joining: not measured (no stream.ended)")
        return
    print(f"live bit rate, a minute alone {alone / 1e6:.3f} Mbit/s, with {joins} viewers joining in it {watched / 1e6:.3f} Mbit/s"
          f" ({forced} IDRs made for them): {watched / alone:.3f}x")


def report(onair, openings=20):
    if not os.access(PYTHON, os.X_OK):
        print(f"first WebRTC picture: not measured ({PYTHON} is missing: make test installs it)")
        return
    port = free_port()
    work = tempfile.mkdtemp(prefix="onair-bench-webrtc-")
    server, log = start(onair, port, work)
    times = []
    try:
        time.sleep(6)  # a live stream with its first picture
        rng = random.Random(45)
        for _ in range(openings):
            time.sleep(rng.uniform(0.0, 2.0))  # a random moment on the 2 s grid
            run = subprocess.run([PYTHON, CLIENT, f"http://127.0.0.1:{port}/whep", "1"], capture_output=True, text=True, timeout=60)
            result = json.loads(run.stdout or "{}")
            if "first_picture_ms" in result:
                times.append(result["first_picture_ms"])
    finally:
        server.terminate()
        server.wait()
    log.seek(0)
    forced = re.findall(r"idrs_for_viewers=(\d+)", log.read())
    times.sort()
    if not times:
        print("first WebRTC picture: no opening played")
        return
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f"first WebRTC picture (aiortc, answer → first decoded picture, {len(times)} of {openings} openings at random moments)")
    print(f"  median {times[len(times) // 2]} ms, p95 {p95} ms; IDRs made for viewers: {forced[-1] if forced else '?'}"
          f" (before issue 45: the grid's next IDR, 0.46-1.65 s, median 1.0 s)")
    bitrate_cost(onair)
