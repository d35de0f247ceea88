#!/usr/bin/env python3
"""Glass-to-glass latency on loopback, in headless Chromium and Firefox (make bench, issue 18).

onair runs in real time on its synthetic camera, whose every picture carries its frame
index in a band of 32 blocks at the top; `source.started` says when frame 0 was captured,
on the wall clock. The viewer page plays the stream; a requestVideoFrameCallback reads the
band of each frame as it is presented (a canvas) and takes presentation time − capture
time. Reported, median and 95th percentile over SECONDS each:
  (a) regular HLS from the built-in server (the viewer's /?ll=0: Chromium's native HLS),
  (b) low-latency HLS (the viewer's default: MSE, part by part),
  (b') the same in headless Firefox (Debian's firefox-esr, over Marionette),
  (d) WebRTC (the viewer's default on the board, WHEP) in Chromium, with sound (the
      browser holds the picture to keep it with the sound) and (d'') picture only
      (/?audio=0: each picture shown when decoded), with onair's own share
      beside it: capture to the picture's packets being handed to the sender (the
      encoder's time; /api/status webrtc.picture_after_capture_ms), and the time to first
      frame (the page opened to the first picture shown) over a few openings. Firefox
      here has no H.264 for WebRTC (no OpenH264 plugin offline): not measured.
  (e) onair's CPU with 0, 1 and 10 WebRTC viewers (one Chromium page holding the
      connections), 20 s each: the cost of packetizing, encrypting and sending, and of Opus
      while anyone watches (goal: 10 viewers at most 15 % over none).
  (c) from a part's last frame being captured to its bytes arriving at a client on the
      board that asks for each hinted part (the server's X-Onair-Captured-Ns against
      CLOCK_MONOTONIC), and the frame time beside it, which the goal allows on top of the
      encoder's own delay.
"""
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from browser import Chromium

ONAIR = os.environ.get("ONAIR_BINARY", ".build/release/onair")
SECONDS = int(os.environ.get("ONAIR_LATENCY_SECONDS", "60"))
# More `onair run` options to try (e.g. "--set hls.part_seconds=0.2"); none in make bench.
EXTRA = os.environ.get("ONAIR_LATENCY_ARGS", "").split()
WARMUP = 8  # seconds of playback before measuring: the player settles at its hold-back


class Firefox:
    """Headless Firefox over Marionette, its own protocol (`<length>:<json>` messages on the
    TCP port it writes to the profile), the same calls as browser.Chromium."""

    def __init__(self, profile):
        os.makedirs(profile, exist_ok=True)
        with open(os.path.join(profile, "user.js"), "w") as prefs:
            for name, value in [("marionette.port", 0), ("media.autoplay.default", 0), ("media.autoplay.blocking_policy", 0),
                                ("browser.shell.checkDefaultBrowser", "false"), ("datareporting.policy.dataSubmissionEnabled", "false"),
                                ("toolkit.telemetry.reportingpolicy.firstRun", "false"), ("app.update.disabledForTesting", "true")]:
                prefs.write(f'user_pref("{name}", {value});\n')
        self.process = subprocess.Popen(
            ["firefox-esr", "--headless", "--marionette", "--no-remote", "--profile", profile, "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": profile, "LANG": "C.UTF-8", "MOZ_CRASHREPORTER_DISABLE": "1"})
        port_file = os.path.join(profile, "MarionetteActivePort")
        deadline = time.time() + 60
        while not os.path.exists(port_file) and time.time() < deadline:
            time.sleep(0.1)
        with open(port_file) as f:
            self.socket = socket.create_connection(("127.0.0.1", int(f.read())))
        self.buffer = b""
        self.next_id = 1
        self.receive()  # the server's hello
        self.call("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"pageLoadStrategy": "eager"}}})

    def receive(self):
        while b":" not in self.buffer:
            self.buffer += self.socket.recv(65536)
        length, rest = self.buffer.split(b":", 1)
        while len(rest) < int(length):
            rest += self.socket.recv(65536)
        self.buffer = rest[int(length):]
        return json.loads(rest[:int(length)])

    def call(self, name, params):
        body = json.dumps([0, self.next_id, name, params]).encode()
        self.next_id += 1
        self.socket.sendall(str(len(body)).encode() + b":" + body)
        while True:
            reply = self.receive()
            if reply[0] == 1 and reply[1] == self.next_id - 1:
                if reply[2]:
                    raise RuntimeError(f"{name}: {reply[2]}")
                return reply[3]

    def open(self, url):
        self.call("WebDriver:Navigate", {"url": url})

    def evaluate(self, expression):
        return self.call("WebDriver:ExecuteScript", {"script": f"return ({expression});", "args": []}).get("value")

    def close(self):
        self.socket.close()
        self.process.kill()
        self.process.wait()


# Each presented frame: its presentation time on the wall clock and its index, read from
# the band (block k = bit 31 − k; bright is 1).
PROBE = """(() => {
  if (window.__frames) return true;
  const video = document.getElementById("video");
  if (!video || !video.requestVideoFrameCallback) return false;
  window.__frames = [];
  const canvas = document.createElement("canvas");
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const step = (now, meta) => {
    const w = video.videoWidth, h = video.videoHeight, band = (Math.floor(h / 16) & ~1);
    if (w && band) {
      canvas.width = w; canvas.height = band;
      context.drawImage(video, 0, 0, w, band, 0, 0, w, band);
      const pixels = context.getImageData(0, band >> 1, w, 1).data;
      let index = 0;
      for (let k = 0; k < 32; k++) index = index * 2 + (pixels[4 * Math.floor((k + 0.5) * w / 32)] > 128 ? 1 : 0);
      window.__frames.push([performance.timeOrigin + meta.expectedDisplayTime, index]);
      if (window.__first === undefined) window.__first = meta.expectedDisplayTime;
    }
    video.requestVideoFrameCallback(step);
  };
  video.requestVideoFrameCallback(step);
  return true;
})()"""


def percentiles(values):
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, int(0.95 * len(values)))]


def glass_to_glass(browser, url, frame0_ms, fps):
    browser.open(url)
    deadline = time.time() + 60
    while not browser.evaluate(PROBE) and time.time() < deadline:
        time.sleep(0.2)
    while (browser.evaluate("window.__frames.length") or 0) < 5 and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(WARMUP)
    browser.evaluate("window.__frames = []")
    time.sleep(SECONDS)
    frames = browser.evaluate("window.__frames") or []
    player = browser.evaluate("video.dataset.player")
    # A frame whose band was misread (scaling, a half-decoded picture) lands far off.
    latencies = [(shown - (frame0_ms + index * 1000.0 / fps)) / 1000 for shown, index in frames]
    latencies = [value for value in latencies if -1 < value < 60]
    return player, latencies


def first_frames(port, runs):
    """Seconds from opening the viewer (WebRTC) to its first picture shown, `runs` times."""
    out = []
    work = tempfile.mkdtemp(prefix="onair-ttff-")
    browser = Chromium(os.path.join(work, "chromium"))
    try:
        for _ in range(runs):
            browser.open(f"http://127.0.0.1:{port}/?mode=webrtc")
            deadline = time.time() + 15
            while not browser.evaluate(PROBE) and time.time() < deadline:
                time.sleep(0.05)
            first = None
            while first is None and time.time() < deadline:
                first = browser.evaluate("window.__first === undefined ? null : window.__first")
                time.sleep(0.05)
            if first is not None and browser.evaluate("video.dataset.player") == "webrtc":
                out.append(first / 1000)
            browser.open("about:blank")
            # A random moment of the IDR period for the next opening: where in it a viewer
            # arrives is what its wait for the next IDR depends on.
            time.sleep(0.5 + random.random() * 2)
    finally:
        browser.close()
        subprocess.run(["rm", "-rf", work])
    return out


VIEWERS_PAGE = """<!doctype html><body><script>
window.many = async function(base, n) {
  window.viewers = [];
  for (let i = 0; i < n; i++) {
    const pc = new RTCPeerConnection();
    pc.addTransceiver('video', {direction: 'recvonly'});
    pc.addTransceiver('audio', {direction: 'recvonly'});
    await pc.setLocalDescription(await pc.createOffer());
    const r = await fetch(base + '/whep', {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
    await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
    window.viewers.push(pc);
  }
  window.ready = n;
};
</script></body>"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_with_viewers(onair, port, seconds=20):
    """onair's CPU seconds per second with 0, 1 and 10 WebRTC viewers."""
    work = tempfile.mkdtemp(prefix="onair-viewers-")
    page = os.path.join(work, "viewers.html")
    with open(page, "w") as f:
        f.write(VIEWERS_PAGE)
    out = {}
    try:
        for count in (0, 1, 10):
            browser = None
            # Every earlier viewer gone (closed, or its consent lapsed) before measuring.
            deadline = time.time() + 40
            while time.time() < deadline and (json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status").read())
                                              .get("webrtc") or {}).get("sessions"):
                time.sleep(0.5)
            if count:
                browser = Chromium(os.path.join(work, f"chromium{count}"))
                browser.open("file://" + page)
                time.sleep(1)
                browser.evaluate(f"window.many('http://127.0.0.1:{port}', {count}), 0")
                deadline = time.time() + 30
                while browser.evaluate("window.ready || 0") != count and time.time() < deadline:
                    time.sleep(0.2)
                time.sleep(4)  # connected, and past the next IDR
            status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status").read())
            connected = sum(1 for s in (status.get("webrtc") or {}).get("sessions", []) if s.get("connected"))
            start = cpu_seconds(onair.pid)
            time.sleep(seconds)
            out[count] = ((cpu_seconds(onair.pid) - start) / seconds, connected)
            if browser:
                browser.close()
                time.sleep(2)
    finally:
        subprocess.run(["rm", "-rf", work])
    return out


def part_delays(port, stream, seconds):
    """Asks for each hinted part as a player does; seconds from capture to arrival."""
    base = f"http://127.0.0.1:{port}/streams/{stream}/"
    playlist = urllib.request.urlopen(base + "playlist.m3u8").read().decode()
    delays = []
    end = time.time() + seconds
    while time.time() < end:
        hint = re.search(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"', playlist)
        if not hint:
            break
        with urllib.request.urlopen(base + hint.group(1)) as response:
            response.read()
            arrived = time.monotonic_ns()
            captured = int(response.headers["X-Onair-Captured-Ns"])
        delays.append((arrived - captured) / 1e9)
        msn, part = re.search(r"(\d+)\.(\d+)\.m4s$", hint.group(1)).groups()
        playlist = urllib.request.urlopen(f"{base}playlist.m3u8?_HLS_msn={int(msn)}&_HLS_part={part}&_HLS_skip=YES").read().decode()
    return delays


def start_onair(binary, work, settings, segments=3, more=(), extra=()):
    """`onair run` on the synthetic camera with its JSON log: the process, and from its log
    the web server's port, frame 0's wall-clock capture time, the frame rate, and each
    event named in `more`; returns once the live stream has `segments` segments."""
    onair = subprocess.Popen([binary, "run", "--source", "synthetic", "--out", os.path.join(work, "out"),
                              "--listen", "127.0.0.1:0", "--log-format", "json"] + [a for s in settings for a in ("--set", s)] + list(extra),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = {}
    for line in onair.stderr:
        event = json.loads(line) if line.startswith("{") else {}
        name = event.get("event")
        if name == "source.started":
            found["frame0_ms"], found["fps"] = event["frame0_wall_ms"], event["fps"]
        if name == "server.listening":
            found["port"] = int(event["url"].rstrip("/").rsplit(":", 1)[1])
        if name in more:
            found[name] = event
        if all(key in found for key in ("frame0_ms", "port", *more)):
            break
    # Drain onair's log so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in onair.stderr], daemon=True).start()
    for _ in range(120):
        streams = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{found['port']}/api/streams").read())
        if streams and streams[0]["segments"] >= segments:
            break
        time.sleep(0.5)
    found["stream"] = streams[0]["id"]
    return onair, found


def report(binary=ONAIR):
    work = tempfile.mkdtemp(prefix="onair-latency-")
    onair, found = start_onair(binary, work, ["webrtc.port=0", "webrtc.max_viewers=20", "webrtc.max_viewers_per_address=20"], extra=EXTRA)
    browser = None
    try:
        port, frame0_ms, fps, stream = found["port"], found["frame0_ms"], found["fps"], found["stream"]
        print(f"glass-to-glass on loopback, 720p{fps} synthetic camera, headless browsers, {SECONDS} s each (after {WARMUP} s)")
        medians = {}
        for label, make, page in [("(a) regular HLS", Chromium, "/?ll=0"), ("(b) low-latency HLS", Chromium, "/?mode=ll"),
                                  ("(b') low-latency HLS in Firefox", Firefox, "/?mode=ll"), ("(d) WebRTC", Chromium, "/?mode=webrtc"),
                                  ("(d'') WebRTC, picture only", Chromium, "/?mode=webrtc&audio=0")]:
            # One browser at a time: the viewer is on another machine in real use, and its
            # decoding must not slow the board's encoders (nor those of the next run).
            browser = make(os.path.join(work, make.__name__.lower()))
            player, latencies = glass_to_glass(browser, f"http://127.0.0.1:{port}{page}", frame0_ms, fps)
            browser.close()
            browser = None
            if len(latencies) < 10:
                print(f"  {label}: too few frames read ({len(latencies)}; player {player})")
                continue
            median, p95 = percentiles(latencies)
            medians[label] = median
            print(f"  {label} [{player}]: median {median:.2f} s, 95th percentile {p95:.2f} s ({len(latencies)} frames)")
        if "(a) regular HLS" in medians and "(b) low-latency HLS" in medians:
            print(f"  ratio low-latency/regular: {medians['(b) low-latency HLS'] / medians['(a) regular HLS']:.2f}")
        if "(d) WebRTC" in medians and "(b) low-latency HLS" in medians:
            print(f"  ratio WebRTC/low-latency: {medians['(d) WebRTC'] / medians['(b) low-latency HLS']:.2f} (goal: WebRTC median <= 0.150 s, p95 <= 0.200 s)")
        status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status").read())
        sender = (status.get("webrtc") or {}).get("picture_after_capture_ms")
        if sender is not None:
            print(f"  (d) onair's share: capture to the picture's packets at the sender, median {sender:.0f} ms "
                  f"(one frame is {1000 / fps:.0f} ms); the rest is the network hop, the browser's jitter buffer, decoding and paint")
        print("  (d') WebRTC in Firefox: not measured (Debian's Firefox has H.264 for WebRTC only through Cisco's OpenH264 plugin, "
              "downloaded at its first run; offline it is refused and the viewer plays LL-HLS)")
        firsts = first_frames(port, 5)
        if firsts:
            median, p95 = percentiles(firsts)
            print(f"  (d) WebRTC time to first frame (page opened to first picture shown): median {median:.2f} s, "
                  f"worst {max(firsts):.2f} s over {len(firsts)} openings (a viewer begins at the next IDR: "
                  f"hls.segment_seconds apart)")
        cpu = cpu_with_viewers(onair, port)
        if 0 in cpu and cpu[0][0] > 0:
            print("  (e) onair's CPU with WebRTC viewers (cores busy): " + ", ".join(
                f"{count} viewers ({connected} connected) {used:.2f}" for count, (used, connected) in cpu.items()))
            print(f"      ratio 1/0 viewers {cpu[1][0] / cpu[0][0]:.2f}, 10/0 viewers {cpu[10][0] / cpu[0][0]:.2f} (goal <= 1.15)")
        delays = part_delays(port, stream, SECONDS)
        if delays:
            median, p95 = percentiles(delays)
            print(f"  (c) part served after its last frame's capture: median {median * 1000:.0f} ms, "
                  f"95th percentile {p95 * 1000:.0f} ms ({len(delays)} parts; one frame is {1000 / fps:.0f} ms)")
    finally:
        if browser:
            browser.close()
        onair.terminate()
        onair.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(report())
