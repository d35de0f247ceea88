#!/usr/bin/env python3
"""A WHEP viewer made of aiortc (PyPI), an independent WebRTC stack: it offers H.264 as
Constrained Baseline only (42001f/42e01f), as many embedded and GStreamer-based
receivers do, and decodes with libavcodec (PyAV).

  whep_client.py URL FRAMES     POST an offer to URL (…/whep), play until FRAMES pictures
                                are decoded (or 30 s pass)
  whep_client.py URL FRAMES hold
                                the same, then say so on standard error (one JSON line with
                                both sides' ICE credentials) and keep the session open until
                                killed: a viewer to freeze with SIGSTOP

Prints one JSON object: the pictures decoded, their size, the answer's H.264 fmtp, and
how long the first picture took from the answer; {"error": ...} and exit 1 on failure.
"""
import asyncio
import json
import sys
import time
import urllib.request


def ice(sdp):
    lines = sdp.split("\r\n")
    return {name: next((l.split(":", 1)[1] for l in lines if l.startswith("a=" + name + ":")), None) for name in ("ice-ufrag", "ice-pwd")}


async def play(url, wanted, hold=False):
    from aiortc import RTCPeerConnection, RTCSessionDescription
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    pc.addTransceiver("audio", direction="recvonly")
    got = {"frames": 0}
    done = asyncio.Event()
    answered = [0.0]

    @pc.on("track")
    def on_track(track):
        if track.kind != "video":
            return

        async def pull():
            while not done.is_set():
                frame = await track.recv()
                if got["frames"] == 0:
                    got["first_picture_ms"] = round((time.monotonic() - answered[0]) * 1000)
                got["frames"] += 1
                got["width"], got["height"] = frame.width, frame.height
                if got["frames"] >= wanted:
                    done.set()
        asyncio.ensure_future(pull())

    await pc.setLocalDescription(await pc.createOffer())
    request = urllib.request.Request(url, data=pc.localDescription.sdp.encode(), method="POST",
                                     headers={"Content-Type": "application/sdp"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer = reply.read().decode()
        got["status"] = reply.status
    answered[0] = time.monotonic()
    got["fmtp"] = [line for line in answer.split("\r\n") if line.startswith("a=fmtp:") and "profile-level-id" in line]
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
    try:
        await asyncio.wait_for(done.wait(), timeout=30)
    except asyncio.TimeoutError:
        pass
    if hold:
        got["board"], got["viewer"] = ice(answer), ice(pc.localDescription.sdp)
        print("holding " + json.dumps(got), file=sys.stderr, flush=True)
        await asyncio.Event().wait()
    await pc.close()
    return got


def main():
    try:
        result = asyncio.run(play(sys.argv[1], int(sys.argv[2]), hold=sys.argv[3:4] == ["hold"]))
    except Exception as error:  # the client's own exception, said as it said it
        print(json.dumps({"error": type(error).__name__ + ": " + str(error)}))
        sys.exit(1)
    print(json.dumps(result))


main()
