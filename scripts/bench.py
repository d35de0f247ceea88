#!/usr/bin/env python3
"""make bench: onair against the ffmpeg CLI doing the same job, in one run.

1. The whole job: 20 s of 720p30 synthetic video + 48 kHz mono tone, H.264 (libx264
   veryfast/zerolatency, 1.5 Mb/s, GOP 60, no B-frames) + AAC 64 kb/s, cut into 2 s fMP4
   HLS segments on disk. onair runs `--pace fast`; ffmpeg gets the very same pictures from
   onair's synthetic camera (onair-bench frames | ffmpeg -f rawvideo), because x264's work
   depends on the picture; ffmpeg on its own testsrc2 pattern is shown for reference.
   The same with the local recording on: onair's default (a second encoder, 5 Mb/s H.264
   with an IDR every 2 s, one-second fragments made durable, then a moov-first MP4) against
   ffmpeg writing the same two outputs (HLS + a `+faststart` MP4) from the same frames;
   onair's recording write latency (write + fdatasync per fragment) is shown too.
   And a two-rung quality ladder (video.ladder=auto: 1280x720 and 854x480, one audio
   rendition) against ffmpeg splitting and scaling the same frames (-filter_complex
   split/scale, var_stream_map), and against onair's single rung.
2. Packaging alone: the same pre-encoded samples (the stream onair just wrote) packaged
   again into fMP4 HLS by onair-bench and by `ffmpeg -c copy -f hls`.
3. Start-up: in real time, time to the first preview frame and until recording can
   start (encoder.ready), with the talk's deferred start (camera and preview first) and
   without it (startup.deferred=off: everything else first, then the camera). Then the
   launch as a user waits for it, timed from outside: from just before fork/exec to the
   `preview.first_frame` line arriving on the pipe, with warm caches and with the page
   cache dropped (`echo 3 > /proc/sys/vm/drop_caches`, as root) before each start; and
   `onair version` against `ffmpeg -version` (the loader, the runtime, nothing else).
4. Publish lag: in real time, the time from a segment stored to the playlist that lists
   it being confirmed by an HTTP origin (nginx WebDAV on loopback); median and worst.
5. Taking footage home (bench_offline.py): export and fetch of 10- and 60-minute
   streams, throughput and memory, against `ffmpeg -c copy -movflags +faststart`.
6. Hardening (bench_hardening.py): `onair validate` on 1k/10k/100k-segment playlists, a
   normal client's latency while 2,000 slow sockets are open (nginx beside it), and the
   time issue 44's 64 KB WHEP offers cost, with /api/status timed while four are posted.
7. Glass-to-glass latency (bench_latency.py): in real time, headless Chromium showing the
   synthetic camera through the viewer, regular HLS against low-latency HLS, median and
   95th percentile over 60 s each, and how soon a part is served after its last frame.
8. RTSP (bench_rtsp.py): glass-to-glass into ffmpeg's low-delay decoder over TCP and UDP,
   and onair's CPU with 0, 1 and 10 RTSP clients.
9. WebRTC (bench_webrtc.py): how soon a viewer (aiortc) sees its first picture, median and
   95th percentile of 20 openings at random moments, and the IDRs made for viewers; the
   live bit rate of a minute alone and with 10 viewers joining in it.
10. Going live (bench_destinations.py): what each RTMP destination costs, the time from a
   stream's start to the server publishing it, reconnecting after a cut, and glass-to-glass
   through nginx-rtmp.

CPU seconds (user + system) and peak RSS come from wait4(2) of each child, so they count
the process alone. Figures on a shared machine are noisy: compare ratios within one run.
"""
import json
import os
import socket
import shutil
import subprocess
import sys
import tempfile
import time

import bench_hardening
import bench_latency
import bench_destinations
import bench_offline
import bench_rtsp
import bench_webrtc

ONAIR = os.environ.get("ONAIR_BINARY", ".build/release/onair")
ONAIR_BENCH = os.path.join(os.path.dirname(ONAIR), "onair-bench")
SECONDS = 20
REPEATS = 3          # the whole job, per tool; the lowest CPU figure is kept
PACKAGE_RUNS = 10    # packaging runs per tool

# What ffmpeg does after its video input: the same encoder settings as onair, a 1 kHz tone
# for audio, and fMP4 HLS with 2 s segments.
ENCODE_AND_PACKAGE = [
    "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
    "-t", str(SECONDS), "-map", "0:v", "-map", "1:a",
    "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", "high",
    "-pix_fmt", "yuv420p", "-b:v", "1500k", "-maxrate", "1500k", "-bufsize", "1500k",
    "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "0",
    "-c:a", "aac", "-b:a", "64k", "-ac", "1",
    "-f", "hls", "-hls_segment_type", "fmp4", "-hls_time", "2", "-hls_playlist_type", "event",
    "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "seg%06d.m4s", "playlist.m3u8"]

# The two-rung ladder (video.ladder=auto at 720p: 1280x720 at 1.5 Mb/s and 854x480 at
# 900 kb/s) made by ffmpeg from the same frames: split, one copy scaled with libswscale,
# both encoded with the same x264 settings, the sound once as an audio rendition.
LADDER = [
    "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", str(SECONDS),
    "-filter_complex", "[0:v]split=2[top][low];[low]scale=854:480[small]",
    "-map", "[top]", "-map", "[small]", "-map", "1:a",
    "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", "high", "-pix_fmt", "yuv420p",
    "-b:v:0", "1500k", "-maxrate:v:0", "1500k", "-bufsize:v:0", "1500k",
    "-b:v:1", "900k", "-maxrate:v:1", "900k", "-bufsize:v:1", "900k",
    "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "0",
    "-c:a", "aac", "-b:a", "64k", "-ac", "1",
    "-f", "hls", "-hls_segment_type", "fmp4", "-hls_time", "2", "-hls_playlist_type", "event",
    "-var_stream_map", "v:0,agroup:audio v:1,agroup:audio a:0,agroup:audio", "-master_pl_name", "index.m3u8",
    "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "v%v/seg%06d.m4s", "v%v/playlist.m3u8"]

# ffmpeg's second output for the recording job: the same frames again, 5 Mb/s, GOP 60.
RECORDING_OUTPUT = [
    "-map", "0:v", "-map", "1:a", "-t", str(SECONDS),
    "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", "high",
    "-pix_fmt", "yuv420p", "-b:v", "5M", "-maxrate", "5M", "-bufsize", "5M",
    "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "0",
    "-c:a", "aac", "-b:a", "64k", "-ac", "1", "-movflags", "+faststart", "recording.mp4"]


def measure(argv, cwd=None):
    """Runs argv, returns (cpu_seconds, peak_rss_mib, wall_seconds); fails loudly."""
    start = time.monotonic()
    child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr_data = b""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    stderr_data = child.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench: {' '.join(argv)} failed:\n{stderr_data.decode(errors='replace')[-2000:]}")
    measure.last_stderr = stderr_data.decode(errors="replace")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, wall


def measure_pipe(producer, consumer, cwd=None):
    """producer | consumer; returns the pair's summed CPU, the larger peak RSS, wall."""
    start = time.monotonic()
    first = subprocess.Popen(producer, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    second = subprocess.Popen(consumer, cwd=cwd, stdin=first.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first.stdout.close()
    results = []
    for child in (second, first):
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"bench: {' '.join(child.args)} failed:\n{second.stderr.read().decode(errors='replace')[-2000:]}")
        results.append(usage)
    wall = time.monotonic() - start
    return (sum(u.ru_utime + u.ru_stime for u in results), max(u.ru_maxrss for u in results) / 1024, wall)


def publish_lag(work):
    """Real time, 20 s of 1 s segments published to nginx (WebDAV) on loopback: from each
    segment.stored to the playlist.published that first lists it, in ms."""
    site = os.path.join(work, "nginx")
    os.makedirs(os.path.join(site, "root"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(os.path.join(site, "nginx.conf"), "w") as conf:
        conf.write(f"""daemon off; master_process off; user root; pid {site}/nginx.pid; error_log {site}/error.log;
events {{ worker_connections 64; }}
http {{ access_log off; client_body_temp_path {site}/body;
  server {{ listen 127.0.0.1:{port}; root {site}/root; client_max_body_size 0;
    location / {{ dav_methods PUT; create_full_put_path on; }} }} }}
""")
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", os.path.join(site, "nginx.conf"), "-e", os.path.join(site, "error.log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        run = subprocess.run([ONAIR, "run", "--duration", "20", "--listen", "off", "--out", os.path.join(work, "lag"),
                              "--log-format", "json", "--set", "hls.segment_seconds=1",
                              "--set", f"publish.url=http://127.0.0.1:{port}/"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    finally:
        nginx.terminate()
        nginx.wait()
    stored, listed = {}, []
    for line in run.stderr.decode().splitlines():
        event = json.loads(line)
        if event["event"] == "segment.stored":
            stored[event["seq"]] = event["t_ms"]
        elif event["event"] == "playlist.published":
            listed.append((event["seq"], event["t_ms"]))
    lags = []
    for seq, at in stored.items():
        first = min((t for count, t in listed if count >= seq), default=None)
        if first is not None:
            lags.append(first - at)
    return sorted(lags), len(stored)


def startup_times(work, mode, runs=3):
    """Median t_ms of preview.first_frame and encoder.ready over `runs` real-time starts."""
    preview, ready = [], []
    for i in range(runs):
        run = subprocess.run([ONAIR, "run", "--duration", "1", "--listen", "127.0.0.1:0", "--log-format", "json",
                              "--out", os.path.join(work, f"startup-{mode}{i}"), "--set", f"startup.deferred={mode}"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        times = {}
        for line in run.stderr.decode().splitlines():
            event = json.loads(line)
            times.setdefault(event["event"], event["t_ms"])
        preview.append(times["preview.first_frame"])
        ready.append(times["encoder.ready"])
    return sorted(preview)[runs // 2], sorted(ready)[runs // 2]


def small_process(argv):
    """measure() for a process smaller than this Python: a child's peak RSS includes the
    memory it had between fork and exec (Python's), so GNU time forks it instead."""
    started = time.monotonic()
    run = subprocess.run(["/usr/bin/time", "-f", "%M %e %U %S", "--"] + argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    wall = time.monotonic() - started
    kib, _, user, system = run.stderr.decode().split()[-4:]
    return float(user) + float(system), int(kib) / 1024, wall


def launch_ms(argv, event, cold):
    """ms from just before fork/exec until a stderr line naming `event` arrives."""
    if cold:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    started = time.monotonic_ns()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    arrived = None
    for line in child.stderr:
        if arrived is None and event in line:
            arrived = time.monotonic_ns()
    if child.wait() != 0 or arrived is None:
        sys.exit(f"bench: {' '.join(argv)} exited {child.returncode} without logging {event.decode()}")
    return (arrived - started) / 1e6


def launch_times(work, runs=5):
    """Median exec → first preview frame, warm and cold; None for cold when not root."""
    argv = [ONAIR, "run", "--source", "synthetic", "--duration", "1", "--listen", "off",
            "--out", os.path.join(work, "launch"), "--set", "record.enabled=off"]
    launch_ms(argv, b"preview.first_frame", cold=False)  # the binary in the page cache
    warm = sorted(launch_ms(argv, b"preview.first_frame", cold=False) for _ in range(runs))[runs // 2]
    cold = None
    if os.geteuid() == 0:
        cold = sorted(launch_ms(argv, b"preview.first_frame", cold=True) for _ in range(runs))[runs // 2]
    return warm, cold


def best(runs):
    cpu = min(r[0] for r in runs)
    rss = min(r[1] for r in runs)
    wall = min(r[2] for r in runs)
    return cpu, rss, wall


def main():
    for tool in (ONAIR, ONAIR_BENCH, "/usr/bin/ffmpeg"):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench: {tool} is missing (run 'make build')")
    work = tempfile.mkdtemp(prefix="onair-bench-")
    try:
        onair_runs, ffmpeg_runs, lavfi_runs, ladder_runs, ffmpeg_ladder_runs = [], [], [], [], []
        record_runs, ffmpeg_record_runs, write_latency = [], [], []
        frames = [ONAIR_BENCH, "frames", "1280", "720", "30", str(SECONDS)]
        raw_input = ["ffmpeg", "-v", "error", "-nostdin", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "1280x720", "-r", "30", "-i", "-"]
        for i in range(REPEATS):
            out = os.path.join(work, f"onair{i}")
            onair_runs.append(measure([ONAIR, "run", "--source", "synthetic", "--pace", "fast", "--duration", str(SECONDS),
                                       "--listen", "off", "--out", out, "--log-format", "json", "--set", "record.enabled=off"]))
            hls = os.path.join(work, f"ffmpeg{i}")
            os.makedirs(hls)
            # The same pictures onair encodes, generated by the same code, piped in raw.
            ffmpeg_runs.append(measure_pipe(frames, raw_input + ENCODE_AND_PACKAGE, cwd=hls))
            lavfi = os.path.join(work, f"lavfi{i}")
            os.makedirs(lavfi)
            lavfi_runs.append(measure(
                ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30"]
                + ENCODE_AND_PACKAGE, cwd=lavfi))
            record_runs.append(measure([ONAIR, "run", "--source", "synthetic", "--pace", "fast", "--duration", str(SECONDS),
                                        "--listen", "off", "--out", os.path.join(work, f"record{i}"), "--log-format", "json"]))
            for line in measure.last_stderr.splitlines():
                event = json.loads(line)
                if event["event"] == "recording.ended":
                    write_latency.append((event["write_ms_p50"], event["write_ms_p99"]))
            both = os.path.join(work, f"ffmpeg-record{i}")
            os.makedirs(both)
            ffmpeg_record_runs.append(measure_pipe(frames, raw_input + ENCODE_AND_PACKAGE + RECORDING_OUTPUT, cwd=both))
            ladder_runs.append(measure([ONAIR, "run", "--source", "synthetic", "--pace", "fast", "--duration", str(SECONDS),
                                        "--listen", "off", "--out", os.path.join(work, f"ladder{i}"), "--log-format", "json",
                                        "--set", "record.enabled=off", "--set", "video.ladder=auto"]))
            rungs = os.path.join(work, f"ffmpeg-ladder{i}")
            os.makedirs(rungs)
            ffmpeg_ladder_runs.append(measure_pipe(frames, raw_input + LADDER, cwd=rungs))
        onair_job, ffmpeg_job, lavfi_job = best(onair_runs), best(ffmpeg_runs), best(lavfi_runs)
        record_job, ffmpeg_record_job = best(record_runs), best(ffmpeg_record_runs)
        ladder_job, ffmpeg_ladder_job = best(ladder_runs), best(ffmpeg_ladder_runs)
        if len(write_latency) != REPEATS:
            sys.exit("bench: onair did not report its recording")

        stream_root = os.path.join(work, "onair0", "streams")
        stream = os.path.join(stream_root, sorted(os.listdir(stream_root))[0])
        onair_pack, ffmpeg_pack = [], []
        for i in range(PACKAGE_RUNS):
            onair_pack.append(measure([ONAIR_BENCH, "package", stream, os.path.join(work, f"pack-onair{i}")]))
            dest = os.path.join(work, f"pack-ffmpeg{i}")
            os.makedirs(dest)
            ffmpeg_pack.append(measure([
                "ffmpeg", "-v", "error", "-nostdin", "-i", os.path.join(stream, "index.m3u8"), "-c", "copy",
                "-f", "hls", "-hls_segment_type", "fmp4", "-hls_time", "2", "-hls_playlist_type", "event",
                "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "seg%06d.m4s", "playlist.m3u8"], cwd=dest))
        onair_cpu = sum(r[0] for r in onair_pack)
        ffmpeg_cpu = sum(r[0] for r in ffmpeg_pack)
        media = SECONDS * PACKAGE_RUNS

        print(f"whole job: {SECONDS} s of 720p30 H.264 1.5 Mb/s + AAC 64 kb/s into 2 s fMP4 HLS (best of {REPEATS})")
        print(f"  {'':10} {'CPU s':>8} {'peak RSS MiB':>13} {'wall s':>8}")
        print(f"  {'onair':10} {onair_job[0]:8.2f} {onair_job[1]:13.1f} {onair_job[2]:8.2f}")
        print(f"  {'ffmpeg':10} {ffmpeg_job[0]:8.2f} {ffmpeg_job[1]:13.1f} {ffmpeg_job[2]:8.2f}   same frames, piped raw (+ their generator)")
        print(f"  {'ffmpeg':10} {lavfi_job[0]:8.2f} {lavfi_job[1]:13.1f} {lavfi_job[2]:8.2f}   its own testsrc2 pattern (other pictures)")
        print(f"  ratio onair/ffmpeg on the same frames: CPU {onair_job[0] / ffmpeg_job[0]:.2f}, peak memory {onair_job[1] / ffmpeg_job[1]:.2f}")
        print(f"live + local recording: the same job plus a 5 Mb/s H.264 + AAC MP4 of the same frames (best of {REPEATS})")
        print(f"  {'onair':10} {record_job[0]:8.2f} {record_job[1]:13.1f} {record_job[2]:8.2f}")
        print(f"  {'ffmpeg':10} {ffmpeg_record_job[0]:8.2f} {ffmpeg_record_job[1]:13.1f} {ffmpeg_record_job[2]:8.2f}   HLS + a +faststart MP4, same frames")
        print(f"  ratio onair/ffmpeg: CPU {record_job[0] / ffmpeg_record_job[0]:.2f}, peak memory {record_job[1] / ffmpeg_record_job[1]:.2f}")
        print(f"a two-rung ladder: the same frames as 1280x720 at 1.5 Mb/s and 854x480 at 900 kb/s, one audio rendition (best of {REPEATS})")
        print(f"  {'onair':10} {ladder_job[0]:8.2f} {ladder_job[1]:13.1f} {ladder_job[2]:8.2f}   video.ladder=auto")
        print(f"  {'ffmpeg':10} {ffmpeg_ladder_job[0]:8.2f} {ffmpeg_ladder_job[1]:13.1f} {ffmpeg_ladder_job[2]:8.2f}   split/scale, var_stream_map, same frames")
        print(f"  ratio onair/ffmpeg: CPU {ladder_job[0] / ffmpeg_ladder_job[0]:.2f}, peak memory {ladder_job[1] / ffmpeg_ladder_job[1]:.2f}; "
              f"onair's ladder against its single rung: CPU {ladder_job[0] / onair_job[0]:.2f}, memory {ladder_job[1] / onair_job[1]:.2f}")
        p50 = sorted(w[0] for w in write_latency)[len(write_latency) // 2]
        p99 = max(w[1] for w in write_latency)
        print(f"  onair recording write latency per 1 s fragment (write + fdatasync): median {p50:.2f} ms, p99 {p99:.2f} ms")
        print(f"packaging alone: the same {SECONDS} s of pre-encoded samples into fMP4 HLS, {PACKAGE_RUNS} runs each")
        print(f"  onair-bench   CPU {onair_cpu:6.2f} s = {media / onair_cpu:7.0f} s of media per CPU second, "
              f"peak RSS {max(r[1] for r in onair_pack):.1f} MiB")
        print(f"  ffmpeg -c copy CPU {ffmpeg_cpu:6.2f} s = {media / ffmpeg_cpu:7.0f} s of media per CPU second, "
              f"peak RSS {max(r[1] for r in ffmpeg_pack):.1f} MiB")
        print(f"  ratio onair/ffmpeg: CPU {onair_cpu / ffmpeg_cpu:.2f}")

        print("start-up (real time, median of 3): ms from process start")
        print(f"  {'':22} {'first preview frame':>20} {'encoders ready':>15}")
        for mode, label in (("auto", "deferred (default)"), ("off", "not deferred")):
            first, ready = startup_times(work, mode)
            print(f"  {label:22} {first:20.1f} {ready:15.1f}")

        warm, cold = launch_times(work)
        print("launch, timed from outside: fork/exec → preview.first_frame line (synthetic source, no display), median of 5")
        print(f"  warm caches {warm:7.1f} ms; caches dropped before each start "
              + (f"{cold:7.1f} ms" if cold is not None else "not measured (needs root)"))
        version = best([small_process([ONAIR, "version"]) for _ in range(5)])
        ffversion = best([small_process(["ffmpeg", "-version"]) for _ in range(5)])
        print(f"  onair version   {version[2] * 1000:6.1f} ms, peak RSS {version[1]:5.1f} MiB")
        print(f"  ffmpeg -version {ffversion[2] * 1000:6.1f} ms, peak RSS {ffversion[1]:5.1f} MiB   "
              f"ratio onair/ffmpeg: time {version[2] / ffversion[2]:.2f}, memory {version[1] / ffversion[1]:.2f}")

        print("camera copies per frame (V4L2 buffer → I420, counted by onair's camera.stats)")
        cameras = sorted(n for n in os.listdir("/dev") if n.startswith("video"))
        if cameras:
            run = subprocess.run([ONAIR, "run", "--source", "v4l2", "--duration", "3", "--listen", "off", "--log-format", "json",
                                  "--out", os.path.join(work, "camera"), "--set", "record.enabled=off"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            stats = [json.loads(line) for line in run.stderr.decode().splitlines() if '"camera.stats"' in line]
            if stats:
                print(f"  {stats[0]['copies_per_frame']:.2f} copies per frame over {stats[0]['frames']} frames ({', '.join(cameras)})")
            else:
                print(f"  not measured: onair did not stream from {', '.join(cameras)} (exit {run.returncode})")
        else:
            print("  not measured: no V4L2 device on this machine (the VM system test streams from vivid)")

        lags, count = publish_lag(work)
        if len(lags) != count:
            sys.exit(f"bench: only {len(lags)} of {count} segments were listed on the origin")
        print(f"publish lag: segment stored → listed in the origin's playlist (nginx WebDAV on loopback, {count} × 1 s segments)")
        print(f"  median {lags[len(lags) // 2]:.1f} ms, worst {lags[-1]:.1f} ms")
        bench_offline.export_and_fetch(ONAIR, ONAIR_BENCH, work, stream, SECONDS, measure)
        bench_hardening.validate_scaling(ONAIR, work)
        bench_hardening.connection_test(ONAIR, work)
        bench_hardening.offer_cost(ONAIR, work)
        bench_latency.report(ONAIR)
        bench_rtsp.report(ONAIR)
        bench_webrtc.report(ONAIR)
        bench_destinations.report()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
