"""make bench, part 6: taking footage home (issue 17).

From the whole job's 20 s stream (720p, 1.5 Mb/s H.264 + AAC, 2 s segments), onair-bench
makes 10- and 60-minute streams (the same samples going round) in one data directory,
which a running onair serves. Then, for each length:
- export: GET /api/export of the whole stream from that onair, the body thrown away; the
  server's CPU for it (its idle rate over the same time taken off) and how far its
  resident memory rose above where it was, sampled every 10 ms; against `ffmpeg -i
  index.m3u8 -c copy -movflags +faststart` on the same files, the same job without a
  server;
- fetch: `onair fetch URL --out FILE` from that server over loopback, against `ffmpeg -i
  URL -c copy -movflags +faststart FILE`, CPU and peak RSS from wait4(2).
Throughput is media seconds per CPU second; peak memory must not grow with the length.
"""
import os
import shutil
import subprocess
import threading
import time
import urllib.request


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(onair, root):
    server = subprocess.Popen([onair, "run", "--out", root, "--listen", "127.0.0.1:0", "--start", "button", "--source", "synthetic",
                               "--set", "record.enabled=off", "--set", "video.quality=low", "--set", "video.fps=5",
                               "--set", "preview.device=off", "--set", "console.device=off"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        if "event=server.listening" in line:
            url = [f for f in line.split() if f.startswith("url=")][0][4:]
            threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()  # keep the pipe drained
            return server, url.rstrip("/")
    raise SystemExit("bench: onair did not start its server")


def export_once(server, url):
    """The server's CPU seconds and resident-memory rise for one whole export, and wall."""
    idle_start, idle_cpu = time.monotonic(), cpu_seconds(server.pid)
    time.sleep(2)
    idle_rate = (cpu_seconds(server.pid) - idle_cpu) / (time.monotonic() - idle_start)
    base = rss_mib(server.pid)
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mib(server.pid))
            time.sleep(0.01)
    sampler = threading.Thread(target=sample)
    sampler.start()
    start, cpu = time.monotonic(), cpu_seconds(server.pid)
    with urllib.request.urlopen(url, timeout=600) as response:
        while response.read(1 << 20):
            pass
    wall = time.monotonic() - start
    used = cpu_seconds(server.pid) - cpu - idle_rate * wall
    done.set()
    sampler.join()
    return max(used, 0.001), peak[0] - base, wall


def viewers_under_exports(base, stream, exporters, seconds=10):
    """A viewer's playlist latency (ms: median, 95th percentile, worst), asked every 0.1 s
    for `seconds`, while `exporters` clients export the stream over and over (a 503 is
    asked again 0.2 s later, as its Retry-After allows sooner than it says)."""
    stop = threading.Event()

    def export_loop():
        while not stop.is_set():
            try:
                with urllib.request.urlopen(f"{base}/api/export?stream={stream}", timeout=120) as response:
                    while response.read(1 << 20) and not stop.is_set():
                        pass
            except Exception:
                stop.wait(0.2)
    threads = [threading.Thread(target=export_loop) for _ in range(exporters)]
    for t in threads:
        t.start()
    time.sleep(2 if exporters else 0)
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.monotonic()
        with urllib.request.urlopen(f"{base}/streams/{stream}/playlist.m3u8", timeout=60) as response:
            response.read()
        latencies.append((time.monotonic() - start) * 1000)
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)], latencies[-1]


def export_and_fetch(onair, onair_bench, work, stream, seconds, measure):
    root = os.path.join(work, "offline-bench")
    os.makedirs(os.path.join(root, "streams"))
    lengths = (10, 60)
    for minutes in lengths:
        scratch = os.path.join(work, f"long{minutes}")
        measure([onair_bench, "package", stream, scratch, "--repeat", str(minutes * 60 // seconds)])
        shutil.move(os.path.join(scratch, "streams", "bench"), os.path.join(root, "streams", f"long{minutes}"))
        shutil.rmtree(scratch)
    server, base = serve(onair, root)
    rows = []
    try:
        for minutes in lengths:
            media = minutes * 60
            index = os.path.join(root, "streams", f"long{minutes}", "index.m3u8")
            export = export_once(server, f"{base}/api/export?stream=long{minutes}")
            out = os.path.join(work, "peer.mp4")
            peer = measure(["ffmpeg", "-v", "error", "-nostdin", "-i", index, "-c", "copy", "-movflags", "+faststart", "-y", out])
            os.unlink(out)
            url = f"{base}/streams/long{minutes}/index.m3u8"
            fetch = measure([onair, "fetch", url, "--out", os.path.join(work, "fetched.mp4")])
            os.unlink(os.path.join(work, "fetched.mp4"))
            fetch_peer = measure(["ffmpeg", "-v", "error", "-nostdin", "-i", url, "-c", "copy", "-movflags", "+faststart", "-y", out])
            os.unlink(out)
            rows.append((minutes, media, export, peer, fetch, fetch_peer))
        # Issue 29, point 5: exports must not starve the viewers.
        crowd = [(n, viewers_under_exports(base, "long60", n)) for n in (0, 8, 32)]
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)
    print("taking footage home: the whole stream as one MP4 (moov first), 720p 1.5 Mb/s + AAC")
    print(f"  {'':24} {'media s/CPU s':>14} {'memory MiB':>11} {'wall s':>7}")
    for minutes, media, export, peer, fetch, fetch_peer in rows:
        print(f"  {minutes:2} min export (server)    {media / export[0]:14.0f} {export[1]:11.1f} {export[2]:7.2f}   rise of the server's RSS")
        print(f"  {minutes:2} min ffmpeg -c copy     {media / peer[0]:14.0f} {peer[1]:11.1f} {peer[2]:7.2f}   peak RSS, same files")
        print(f"  {minutes:2} min onair fetch        {media / fetch[0]:14.0f} {fetch[1]:11.1f} {fetch[2]:7.2f}   peak RSS, over loopback")
        print(f"  {minutes:2} min ffmpeg from URL    {media / fetch_peer[0]:14.0f} {fetch_peer[1]:11.1f} {fetch_peer[2]:7.2f}   peak RSS, same URL")
    (short, long) = rows[0], rows[1]
    print(f"  ratio onair/ffmpeg CPU: export {short[2][0] / short[3][0]:.2f} / {long[2][0] / long[3][0]:.2f}, "
          f"fetch {short[4][0] / short[5][0]:.2f} / {long[4][0] / long[5][0]:.2f} (10 / 60 min)")
    print("a viewer's playlist (60 min stream) while clients export it over and over: ms median / p95 / worst")
    for n, (median, p95, worst) in crowd:
        print(f"  {n:2} exporters  {median:7.1f} {p95:7.1f} {worst:7.1f}")
    print(f"  median with 32 exporters over none: {crowd[2][1][0] / crowd[0][1][0]:.2f}")
    print(f"  memory 60 min over 10 min: export {long[2][1] - short[2][1]:+.1f} MiB, fetch {long[4][1] - short[4][1]:+.1f} MiB, "
          f"ffmpeg {long[3][1] - short[3][1]:+.1f} MiB")
