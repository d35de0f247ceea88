/// The viewer page served at `/`: finds the newest stream by polling /api/streams once a
/// second (as the source talk's viewer does) and plays it with the browser's native HLS.
/// Everything is inline: no script is fetched at run time.
enum Viewer {
    static let html = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>onair</title>
    <style>
      body { margin: 0; background: #111; color: #eee; font: 15px system-ui, sans-serif; }
      header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1em; }
      h1 { font-size: 1.2em; margin: 0; }
      #state { padding: .1em .5em; border-radius: .3em; background: #444; }
      #state.live { background: #c00; }
      video { display: block; width: 100%; max-height: 80vh; background: #000; }
      ul { list-style: none; padding: 0 1em; }
      li a { color: #8cf; }
    </style>
    </head>
    <body>
    <header><h1>onair</h1><span id="state">waiting for a stream</span><span id="info"></span></header>
    <video id="video" controls autoplay muted playsinline></video>
    <ul id="streams"></ul>
    <script>
    "use strict";
    const video = document.getElementById("video");
    const state = document.getElementById("state");
    const info = document.getElementById("info");
    const list = document.getElementById("streams");
    const nativeHLS = video.canPlayType("application/vnd.apple.mpegurl") !== "";
    let current = null;

    function play(stream) {
      current = stream.id;
      if (nativeHLS) {
        video.src = stream.playlist;
        video.play().catch(() => {});
      } else {
        info.textContent = "this browser has no native HLS; open " + stream.playlist + " in an HLS player";
      }
    }

    // A player error (a stall, or a browser's live-HLS engine giving up after a pause)
    // leaves the page dead; start the newest stream again instead.
    video.addEventListener("error", () => {
      info.textContent = "playback error " + (video.error && video.error.code) + ", retrying";
      current = null;
    });
    video.addEventListener("playing", () => { info.textContent = ""; });

    async function poll() {
      try {
        const response = await fetch("/api/streams", { cache: "no-store" });
        const streams = await response.json();
        list.replaceChildren(...streams.map(s => {
          const item = document.createElement("li");
          const link = document.createElement("a");
          link.href = s.playlist;
          link.textContent = s.id;
          item.append(link, " " + s.state + ", " + s.duration.toFixed(1) + " s, " + s.segments + " segments");
          return item;
        }));
        const newest = streams[0];
        if (newest) {
          // Start a live stream only three target durations behind its end
          // (RFC 8216bis §6.3.3); players started closer fail or stall.
          const holdBack = 3 * (newest.target_duration || 2);
          const ready = newest.state === "ended" ? newest.segments > 0 : newest.duration >= holdBack;
          if (newest.id !== current && ready) play(newest);
          if (newest.id !== current && !ready) info.textContent = "starting: " + newest.duration.toFixed(1) + " s of " + holdBack + " s";
          state.textContent = newest.state;
          state.className = newest.state;
        }
      } catch (e) {
        state.textContent = "server unreachable";
      }
    }
    poll();
    setInterval(poll, 1000);
    </script>
    </body>
    </html>
    """
}
