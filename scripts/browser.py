"""Headless Chromium driven over the DevTools protocol, for the scripts that need a real
browser: make bench's latency (bench_latency.py) and the VM's setup page (vm_setup.py)."""
import json
import os
import subprocess
import time


class Chromium:
    """Headless Chromium over the DevTools protocol on a pipe (fds 3 and 4, NUL-framed)."""

    def __init__(self, profile):
        to_r, self.commands = os.pipe()
        self.replies, from_w = os.pipe()

        def fds():
            # Runs before close_fds keeps only pass_fds; duplicates first, so neither
            # end is overwritten by the other's dup2.
            read_end, write_end = os.dup(to_r), os.dup(from_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "--autoplay-policy=no-user-gesture-required",
             "--disable-background-media-suspend", "--disable-renderer-backgrounding", "--window-size=1280,800",
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": profile, "LANG": "C.UTF-8"})
        os.close(to_r)
        os.close(from_w)
        self.buffer = b""
        self.next_id = 1
        self.session = None

    def call(self, method, params=None, timeout=30):
        message = {"id": self.next_id, "method": method, "params": params or {}}
        self.next_id += 1
        if self.session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == message["id"]:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = os.read(self.replies, 65536)
            if not chunk:
                raise RuntimeError("the browser closed the pipe")
            self.buffer += chunk
        raise RuntimeError(f"{method}: no reply")

    def open(self, url):
        if self.session is None:
            page = next(t["targetId"] for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
            self.session = self.call("Target.attachToTarget", {"targetId": page, "flatten": True})["sessionId"]
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def close(self):
        self.process.kill()
        self.process.wait()
