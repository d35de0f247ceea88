"""make bench, part 9: how soon a WebRTC viewer sees its first picture (issue 45).

aiortc (make test's .build/webrtc venv) opens /whep 20 times at random moments against a
live synthetic stream; each opening's time from the answer to its first decoded picture
is kept, and the median and 95th percentile are printed, with how many IDRs the live
encoder made for viewers (stream.ended's idrs_for_viewers).
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


def report(onair, openings=20):
    if not os.access(PYTHON, os.X_OK):
        print(f"first WebRTC picture: not measured ({PYTHON} is missing: make test installs it)")
        return
    port = free_port()
    work = tempfile.mkdtemp(prefix="onair-bench-webrtc-")
    log = open(os.path.join(work, "onair.log"), "w+")
    server = subprocess.Popen([onair, "run", "--source", "synthetic", "--set", "record.enabled=off", "--set", "webrtc.port=0",
                               "--listen", f"127.0.0.1:{port}", "--out", os.path.join(work, "out")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
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
