#if canImport(Glibc)
import Glibc
#endif

/// The viewer page served at `/`: finds the newest stream by polling /api/streams once a
/// second (as the source talk's viewer does) and plays it with the browser's native HLS,
/// or through Media Source Extensions where there is none (Firefox; `/?mse=1` forces it).
/// Everything is inline: no script is fetched at run time.
public enum Viewer {
    /// The page, reading its list of streams from `streams` (`/api/streams` here,
    /// `streams.json` beside the page at a destination); playlist URLs come from the list.
    public static func page(streams: String) -> String {
        html.replacing("__STREAMS_URL__", with: streams)
    }

    static let html = #"""
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
    // Without native HLS (Firefox), or with ?mse=1, play through Media Source Extensions.
    const useMSE = (!nativeHLS || new URLSearchParams(location.search).has("mse")) && "MediaSource" in window;
    let current = null;
    let generation = 0;

    function play(stream) {
      current = stream.id;
      generation += 1;
      if (useMSE) {
        video.dataset.player = "mse";
        playWithMSE(stream.playlist, generation).catch(e => { info.textContent = "MSE: " + e.message; current = null; });
      } else if (nativeHLS) {
        video.dataset.player = "native";
        video.src = stream.playlist;
        video.play().catch(() => {});
      } else {
        info.textContent = "this browser plays neither HLS nor MSE; open " + stream.playlist + " in an HLS player";
      }
    }

    const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
    const resolve = (uri, base) => new URL(uri, new URL(base, location.href)).href;
    async function text(url) {
      const response = await fetch(url, { cache: "no-store" });
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.text();
    }
    async function bytes(url) {
      const response = await fetch(url);
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.arrayBuffer();
    }
    function append(buffer, data) {
      return new Promise((ok, fail) => {
        buffer.addEventListener("updateend", ok, { once: true });
        buffer.addEventListener("error", () => fail(new Error("append failed")), { once: true });
        buffer.appendBuffer(data);
      });
    }

    // onair's streams are one fMP4 variant that only grows (EVENT): read the CODECS and
    // the media playlist from index.m3u8, append init.mp4, then every segment in order,
    // reloading the playlist every half target duration until ENDLIST.
    async function playWithMSE(multivariant, mine) {
      const top = await text(multivariant);
      const codecs = (top.match(/CODECS="([^"]+)"/) || [])[1];
      const mediaURI = top.split("\n").find(l => l && !l.startsWith("#"));
      if (!codecs || !mediaURI) throw new Error("unexpected multivariant playlist");
      const type = 'video/mp4; codecs="' + codecs + '"';
      if (!MediaSource.isTypeSupported(type)) throw new Error(type + " is not supported here");
      const media = resolve(mediaURI, multivariant);
      const source = new MediaSource();
      video.src = URL.createObjectURL(source);
      await new Promise(ok => source.addEventListener("sourceopen", ok, { once: true }));
      const buffer = source.addSourceBuffer(type);
      let next = 0, started = false, haveInit = false;
      while (mine === generation) {
        const playlist = await text(media);
        const lines = playlist.split("\n");
        const target = parseInt((playlist.match(/#EXT-X-TARGETDURATION:(\d+)/) || [])[1] || "2", 10);
        const map = (playlist.match(/#EXT-X-MAP:URI="([^"]+)"/) || [])[1];
        const segments = lines.filter(l => l && !l.startsWith("#"));
        if (!haveInit && map) { await append(buffer, await bytes(resolve(map, media))); haveInit = true; }
        // A live stream starts three target durations (three segments) from its end
        // (RFC 8216bis §6.3.3).
        if (!started && !playlist.includes("#EXT-X-ENDLIST")) next = Math.max(0, segments.length - 3);
        for (; next < segments.length && mine === generation; next++) {
          await append(buffer, await bytes(resolve(segments[next], media)));
          if (!started && buffer.buffered.length) {
            started = true;
            video.currentTime = buffer.buffered.start(0);
            video.play().catch(() => {});
          }
          // Keep a minute behind the play head; the rest would only fill the quota.
          if (buffer.buffered.length && video.currentTime - buffer.buffered.start(0) > 90) {
            buffer.remove(buffer.buffered.start(0), video.currentTime - 60);
            await new Promise(ok => buffer.addEventListener("updateend", ok, { once: true }));
          }
        }
        if (playlist.includes("#EXT-X-ENDLIST")) { if (mine === generation) source.endOfStream(); return; }
        await sleep(target * 500);
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
        const response = await fetch("__STREAMS_URL__", { cache: "no-store" });
        const streams = await response.json();
        list.replaceChildren(...streams.map(s => {
          const item = document.createElement("li");
          const link = document.createElement("a");
          link.href = s.playlist;
          link.textContent = s.id;
          item.append(link, " " + s.state + ", " + s.duration.toFixed(1) + " s, " + s.segments + " segments");
          // On the device: the stream, or its last ten minutes, as one MP4 file.
          if (s.export) {
            const whole = document.createElement("a");
            whole.href = s.export;
            whole.textContent = "download";
            item.append(" ", whole);
            if (s.duration > 600) {
              const last = document.createElement("a");
              last.href = s.export + "&last=600";
              last.textContent = "last 10 minutes";
              item.append(" ", last);
            }
          }
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
    """#
}
