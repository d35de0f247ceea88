"""make bench, issue 13's figures: `onair validate` on long playlists (its work must grow
linearly), and a normal client's latency while 2,000 slow sockets are open.

Peers: `ffmpeg -c copy -f null` reading the same playlists (it demuxes every segment, as
validate parses every segment), and nginx serving the same data directory under the same
attack."""
import os
import resource
import socket
import subprocess
import tempfile
import threading
import time


def run_measured(argv, cwd=None, ok=(0,)):
    """CPU and wall seconds of one child; its stderr goes to a file (a pipe read only after
    the child ends would stop a child that says much, as ffmpeg does on these playlists)."""
    with tempfile.TemporaryFile() as errors:
        start = time.monotonic()
        child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            errors.seek(0)
            raise SystemExit(f"bench: {' '.join(argv)} exited {code}:\n{errors.read().decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def long_playlist(stream, count, path):
    """`count` entries cycling the stream's own segments, each after EXT-X-DISCONTINUITY
    (a new timeline domain, so the repeats are legal), dates advancing with EXTINF."""
    lines = open(os.path.join(stream, "playlist.m3u8")).read().splitlines()
    head = [l for l in lines if l.startswith("#EXT") and not l.startswith(("#EXTINF", "#EXT-X-PROGRAM-DATE-TIME", "#EXT-X-ENDLIST"))]
    # By EXTINF, not by PROGRAM-DATE-TIME: a stream made on an unsynchronised clock has none.
    entries = [(l, lines[i + 1]) for i, l in enumerate(lines) if l.startswith("#EXTINF") and "2.000" in l]
    out = head[:]
    start = 1_796_000_000.0
    for n in range(count):
        extinf, uri = entries[n % len(entries)]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + 2 * n)) + ".000Z"
        out += ["#EXT-X-DISCONTINUITY", f"#EXT-X-PROGRAM-DATE-TIME:{stamp}", extinf, uri]
    out.append("#EXT-X-ENDLIST")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def validate_scaling(onair, work):
    base = os.path.join(work, "validate")
    subprocess.run([onair, "run", "--source", "synthetic", "--pace", "fast", "--duration", "6", "--listen", "off",
                    "--out", base, "--set", "video.quality=low", "--set", "record.enabled=off"],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    stream = os.path.join(base, "streams", sorted(os.listdir(os.path.join(base, "streams")))[0])
    print("onair validate on long playlists (entries cycle one stream's 2 s segments; CPU s, and µs per segment)")
    print(f"  {'segments':>9} {'onair validate':>15} {'µs/seg':>8} {'ffmpeg -c copy -f null':>23} {'µs/seg':>8} {'ratio':>6}")
    for count in (1_000, 10_000, 100_000):
        long_playlist(stream, count, os.path.join(stream, "playlist.m3u8"))
        onair_cpu, _ = run_measured([onair, "validate", stream], ok=(0, 1))
        ffmpeg_cpu, _ = run_measured(["ffmpeg", "-v", "error", "-nostdin", "-i", os.path.join(stream, "index.m3u8"),
                                      "-c", "copy", "-f", "null", "-"], ok=(0, 1))
        print(f"  {count:9d} {onair_cpu:15.2f} {onair_cpu / count * 1e6:8.1f} {ffmpeg_cpu:23.2f} {ffmpeg_cpu / count * 1e6:8.1f}"
              f" {onair_cpu / ffmpeg_cpu:6.2f}")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def slowloris(port, sockets, stop, addresses=8):
    """`sockets` connections spread over `addresses` loopback addresses, each sending a
    request head a byte a second and never finishing it; a closed one is opened again."""
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
    held = []
    def connect(i):
        s = socket.socket()
        s.setblocking(False)
        a = i % addresses
        s.bind((f"127.0.{a // 200}.{2 + a % 200}", 0))
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        return [s, 0, i]
    held = [connect(i) for i in range(sockets)]
    while not stop.is_set():
        for entry in held:
            try:
                entry[0].send(head[entry[1]:entry[1] + 1])
                entry[1] += 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                entry[0].close()
                entry[:] = connect(entry[2])
        stop.wait(1)
    for entry in held:
        entry[0].close()


def normal_client(port, path, seconds):
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
                reply = b""
                while chunk := s.recv(65536):
                    reply += chunk
            ok = reply.startswith(b"HTTP/1.1 200")
        except OSError:
            ok = False
        latencies.append((time.monotonic() - start) * 1000 if ok else float("inf"))
        time.sleep(0.5)
    return sorted(latencies)


def under_attack(port, path, sockets=2000, seconds=15, addresses=8):
    stop = threading.Event()
    attacker = threading.Thread(target=slowloris, args=(port, sockets, stop, addresses))
    attacker.start()
    time.sleep(3)  # the attack in place before the first measured request
    try:
        return normal_client(port, path, seconds)
    finally:
        stop.set()
        attacker.join()


def connection_test(onair, work):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    out = os.path.join(work, "slowloris")
    port = free_port()
    server = subprocess.Popen([onair, "run", "--source", "synthetic", "--set", "video.quality=low", "--set", "record.enabled=off",
                               "--listen", f"127.0.0.1:{port}", "--out", out],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(8)  # a stream with segments to ask for
    try:
        onair_latency = under_attack(port, "/api/streams")
        # Issue 29: 100 addresses, 20 sockets each, under the per-address limit of 32:
        # together past the 1,024 connections, which once kept viewers out.
        onair_many = under_attack(port, "/api/streams", addresses=100)
    finally:
        server.terminate()
        server.wait()
    site = os.path.join(work, "nginx-attack")
    os.makedirs(site)
    nginx_port = free_port()
    with open(os.path.join(site, "nginx.conf"), "w") as conf:
        conf.write(f"""daemon off; master_process off; user root; pid {site}/nginx.pid; error_log {site}/error.log;
worker_rlimit_nofile 8192; events {{ worker_connections 4096; }}
http {{ access_log off; server {{ listen 127.0.0.1:{nginx_port}; root {out}; }} }}
""")
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", os.path.join(site, "nginx.conf"), "-e", os.path.join(site, "error.log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stream = sorted(os.listdir(os.path.join(out, "streams")))[0]
    try:
        time.sleep(0.5)
        nginx_latency = under_attack(nginx_port, f"/streams/{stream}/playlist.m3u8")
    finally:
        nginx.terminate()
        nginx.wait()
    print("a normal client while 2,000 slow sockets (a header byte a second) are open: ms per request, every 0.5 s for 15 s")
    for name, lat in (("onair, 8 addresses", onair_latency), ("onair, 100 addresses", onair_many), ("nginx, 8 addresses", nginx_latency)):
        failed = sum(1 for l in lat if l == float("inf"))
        good = [l for l in lat if l != float("inf")]
        worst = f"{good[-1]:.1f}" if good else "-"
        print(f"  {name:20} median {good[len(good) // 2] if good else float('nan'):7.1f}  worst {worst:>8}  failed {failed} of {len(lat)}")


def hostile_offer(formats, rtpmaps):
    """Issue 44's WHEP offer: one m=video of `formats` and `rtpmaps` H.264 lines that decide nothing."""
    head = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\na=ice-ufrag:Z7bS\r\n"
            "a=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\na=fingerprint:sha-256 " + ":".join(["AB"] * 32) + "\r\n")
    return (head + "m=video 9 UDP/TLS/RTP/SAVPF " + " ".join(formats) + "\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            + "".join(f"a=rtpmap:{i % 128} H264/90000\r\n" for i in range(rtpmaps))).encode()


def timed_request(port, method, path, body=b"", headers=""):
    """ms to the whole answer, and its status (0: none within 60 s)."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body)
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
        status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0
    except OSError:
        status = 0
    return (time.monotonic() - start) * 1000, status


def offer_cost(onair, work):
    """Issue 44: the 64 KB WHEP offers (16,300 formats; 128 formats and 1,950 rtpmaps) timed
    one at a time, and /api/status timed while four are posted at once."""
    port = free_port()
    server = subprocess.Popen([onair, "run", "--source", "synthetic", "--set", "video.quality=low", "--set", "record.enabled=off",
                               "--set", "webrtc.port=0", "--listen", f"127.0.0.1:{port}", "--out", os.path.join(work, "offers")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(6)  # a live stream with its first picture
    sdp = "Content-Type: application/sdp\r\n"
    wide, deep = hostile_offer(["1"] * 16_300, 1_300), hostile_offer([str(i) for i in range(128)], 1_950)
    try:
        quiet = sorted(timed_request(port, "GET", "/api/status")[0] for _ in range(5))[2]
        singles = [(name, timed_request(port, "POST", "/whep", offer, sdp)) for name, offer in (("16,300 formats", wide), ("128 formats, 1,950 rtpmaps", deep))]
        results = []
        posters = [threading.Thread(target=lambda o=o: results.append(timed_request(port, "POST", "/whep", o, sdp))) for o in (wide, deep, wide, deep)]
        for poster in posters:
            poster.start()
        during = timed_request(port, "GET", "/api/status")
        for poster in posters:
            poster.join()
    finally:
        server.terminate()
        server.wait()
    print(f"hostile WHEP offers of {len(wide) // 1024} KB (issue 44; before: 9.8 s each, and /api/status timed out at 60 s with four)")
    for name, (ms, status) in singles:
        print(f"  {name:28} answered {status} in {ms:7.1f} ms")
    print(f"  /api/status: {quiet:.1f} ms alone, {during[0]:.1f} ms ({during[1]}) while four are posted; "
          f"the four took {max(r[0] for r in results):.1f} ms at most")
