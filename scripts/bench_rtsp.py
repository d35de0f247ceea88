#!/usr/bin/env python3
"""RTSP glass-to-glass latency and what RTSP clients cost (make bench, issue 32).

onair runs in real time on its synthetic camera, whose every picture carries its frame
index in a band of 32 blocks at the top; `source.started` says when frame 0 was captured,
on the wall clock. FFmpeg reads rtsp://…/live as an NVR's low-delay decoder would
(`-fflags nobuffer -flags low_delay`, one decoding thread: ffplay's low-latency flags,
without a window to paint in) and writes each decoded picture to a pipe; each picture's
band is read as it arrives, and arrival time − capture time is its glass-to-glass time
less the paint. Reported, median and 95th percentile over SECONDS each, over TCP
(interleaved) and UDP: the goal is a median of at most 200 ms at 720p30 on this machine.
For scale (measured by others on boards, not here): v4l2rtspserver 450–550 ms on a Pi 2
(mpromonet/v4l2rtspserver#38), rpicam-apps' MPEG-TS over UDP 600–850 ms on a Pi 5
(raspberrypi/rpicam-apps#740).

Then onair's CPU with 0, 1 and 10 RTSP clients (ffmpeg copying the stream, half over TCP,
half over UDP), 20 s each: the goal is 10 clients at most 10 % over none.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench_latency import cpu_seconds, percentiles, start_onair

ONAIR = os.environ.get("ONAIR_BINARY", ".build/release/onair")
SECONDS = int(os.environ.get("ONAIR_LATENCY_SECONDS", "60"))
WIDTH, HEIGHT = 640, 360
WARMUP = 3


def decode_index(frame):
    """The synthetic picture's frame index band (SyntheticPattern.decodeIndex): 32 blocks,
    white for 1, black for 0, read in their middle; None when a block is neither."""
    band = (HEIGHT // 16) & ~1
    block = WIDTH // 32
    value = 0
    rows = range(band // 4, max(band // 4 + 1, band * 3 // 4))
    for k in range(32):
        total = count = 0
        for row in rows:
            start = row * WIDTH + k * block
            pixels = frame[start + block // 4:start + block * 3 // 4]
            total += sum(pixels)
            count += len(pixels)
        mean = total // max(count, 1)
        if mean > 180:
            value |= 1 << (31 - k)
        elif mean > 70:
            return None
    return value


def glass_to_glass(url, transport, frame0_ms, fps, seconds):
    """Each decoded picture's arrival minus its capture, in seconds."""
    return arrivals(["-rtsp_transport", transport, "-i", url], frame0_ms, fps, seconds)


def arrivals(source, frame0_ms, fps, seconds):
    """Each picture ffmpeg's low-delay decoder gets from `source` (its input arguments):
    its arrival minus its capture, in seconds (bench_destinations.py reads nginx-rtmp so)."""
    ffmpeg = subprocess.Popen(["ffmpeg", "-hide_banner", "-loglevel", "error", "-fflags", "nobuffer", "-flags", "low_delay",
                               "-threads", "1"] + source + ["-an",
                                                     "-vf", f"scale={WIDTH}:{HEIGHT}:flags=neighbor", "-f", "rawvideo", "-pix_fmt", "gray",
                                                     "-flush_packets", "1", "-"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    size = WIDTH * HEIGHT
    latencies = []
    start = time.time()
    try:
        while time.time() - start < WARMUP + seconds:
            frame = ffmpeg.stdout.read(size)
            arrived = time.time() * 1000
            if len(frame) < size:
                break
            index = decode_index(frame)
            if index is None or time.time() - start < WARMUP:
                continue
            latency = (arrived - (frame0_ms + index * 1000.0 / fps)) / 1000
            if -1 < latency < 10:  # a misread band lands far off
                latencies.append(latency)
    finally:
        ffmpeg.kill()
        ffmpeg.wait()
    return latencies


def cpu_with_clients(onair, port, url, seconds=20):
    """onair's CPU seconds per second with 0, 1 and 10 RTSP clients."""
    out = {}
    for count in (0, 1, 10):
        clients = [subprocess.Popen(["ffmpeg", "-hide_banner", "-loglevel", "error", "-rtsp_transport", "tcp" if n % 2 == 0 else "udp",
                                     "-i", url, "-c", "copy", "-f", "null", "-"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for n in range(count)]
        try:
            deadline = time.time() + 30
            playing = 0
            while time.time() < deadline:
                status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status").read())
                playing = sum(1 for s in (status.get("rtsp") or {}).get("sessions", []) if s.get("playing"))
                if playing >= count:
                    break
                time.sleep(0.2)
            time.sleep(3)  # past the next IDR
            start = cpu_seconds(onair.pid)
            time.sleep(seconds)
            out[count] = ((cpu_seconds(onair.pid) - start) / seconds, playing)
        finally:
            for client in clients:
                client.terminate()
            for client in clients:
                client.wait()
        time.sleep(1)
    return out


def report(binary=ONAIR):
    work = tempfile.mkdtemp(prefix="onair-rtsp-")
    onair, found = start_onair(binary, work, ["webrtc.port=0", "rtsp.port=0", "rtsp.max_clients_per_address=16"], segments=1,
                               more=("rtsp.listening",))
    try:
        port, frame0_ms, fps, rtsp = found["port"], found["frame0_ms"], found["fps"], found["rtsp.listening"]["port"]
        url = f"rtsp://127.0.0.1:{rtsp}/live"
        print(f"RTSP glass-to-glass on loopback, 720p{fps} synthetic camera, ffmpeg's low-delay decoder, {SECONDS} s each")
        for transport in ("tcp", "udp"):
            latencies = glass_to_glass(url, transport, frame0_ms, fps, SECONDS)
            if len(latencies) < 10:
                print(f"  over {transport.upper()}: too few frames read ({len(latencies)})")
                continue
            median, p95 = percentiles(latencies)
            print(f"  over {transport.upper()}: median {median * 1000:.0f} ms, 95th percentile {p95 * 1000:.0f} ms "
                  f"({len(latencies)} pictures; goal: median <= 200 ms; v4l2rtspserver 450-550 ms on a Pi 2, rpicam-apps 600-850 ms on a Pi 5)")
        cpu = cpu_with_clients(onair, port, url)
        if cpu.get(0, (0, 0))[0] > 0:
            print("  onair's CPU with RTSP clients (cores busy): " + ", ".join(
                f"{count} clients ({playing} playing) {used:.2f}" for count, (used, playing) in cpu.items()))
            print(f"      ratio 1/0 clients {cpu[1][0] / cpu[0][0]:.2f}, 10/0 clients {cpu[10][0] / cpu[0][0]:.2f} (goal <= 1.10)")
    finally:
        onair.terminate()
        onair.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(report())
