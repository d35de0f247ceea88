
/// The viewer page served at `/`: finds the newest stream by polling /api/streams once a
/// second (as the source talk's viewer does) and plays it. On the board, a live stream
/// plays over WebRTC (WHEP) where the browser has RTCPeerConnection: a network hop behind
/// the camera; when the offer is refused or no picture comes in time, it falls back to
/// low-latency HLS and says why. A live stream with parts (the
/// built-in server's low-latency playlist) plays through Media Source Extensions, one
/// hinted part at a time: Chromium's native HLS (156) reads such a playlist as regular
/// HLS, without parts or blocking reloads, a few seconds behind, and Firefox has none.
/// Otherwise the browser's native HLS plays it, or MSE segment by segment where there is
/// none. `/?mode=webrtc|ll|hls` forces one (`/?ll=0` is `mode=hls`), `/?mse=1` asks for
/// MSE. Everything is inline: no script is fetched at run time.
public enum Viewer {
    /// The page, reading its list of streams from `streams` (`/api/streams` here,
    /// `streams.json` beside the page at a destination); playlist URLs come from the list.
    /// `device` (the board's `device.name`) titles it; `whep` is where live streams are
    /// offered over WebRTC (`/whep` on the board; none at a destination); `poster` is the
    /// newest picture as JPEG, shown until a live stream's first frame plays (the board's
    /// `/api/snapshot.jpg`; none at a destination).
    public static func page(streams: String, device: String? = nil, whep: String? = nil, poster: String? = nil) -> String {
        // device.name is letters, digits and ._- only; escaped all the same, as any text
        // put into HTML.
        let title = device.map { "onair · " + $0.replacing("&", with: "&amp;").replacing("<", with: "&lt;") } ?? "onair"
        return html.replacing("__LADDER_PLAYER__", with: ladderPlayer).replacing("__WEBRTC_PLAYER__", with: webrtcPlayer)
            .replacing("__STREAMS_URL__", with: streams).replacing("__WHEP_URL__", with: whep ?? "").replacing("__TITLE__", with: title)
            .replacing("__POSTER_URL__", with: poster ?? "")
    }

    /// The start of each page onair makes (this one, and the fleet's), up to the page's own
    /// style rules; `__TITLE__` is its title.
    static let head = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>__TITLE__</title>
    <style>
      body { margin: 0; background: #111; color: #eee; font: 15px system-ui, sans-serif; }
      h1 { font-size: 1.2em; margin: 0; }

    """

    static let html = head + #"""
      header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1em; }
      #state { padding: .1em .5em; border-radius: .3em; background: #444; }
      #state.live { background: #c00; }
      video { display: block; width: 100%; max-height: 80vh; background: #000; }
      ul { list-style: none; padding: 0 1em; }
      li a { color: #8cf; }
    </style>
    </head>
    <body>
    <header><h1>__TITLE__</h1><span id="state">waiting for a stream</span><span id="mode"></span><span id="rung"></span><span id="info"></span></header>
    <video id="video" controls autoplay muted playsinline></video>
    <ul id="streams"></ul>
    <script>
    "use strict";
    const video = document.getElementById("video");
    const state = document.getElementById("state");
    const info = document.getElementById("info");
    const list = document.getElementById("streams");
    const nativeHLS = video.canPlayType("application/vnd.apple.mpegurl") !== "";
    const query = new URLSearchParams(location.search);
    const haveMSE = "MediaSource" in window;
    const whepURL = "__WHEP_URL__";
    const posterURL = "__POSTER_URL__";
    // ?mode=webrtc|ll|hls, else WebRTC where the board offers it and the browser has it,
    // else low latency (parts) through MSE; ?ll=0 is mode=hls. Regular HLS plays natively,
    // or through MSE without native HLS (Firefox) or with ?mse=1.
    const mode = query.get("mode") || (query.get("ll") === "0" ? "hls" : whepURL && "RTCPeerConnection" in window ? "webrtc" : "ll");
    const lowLatency = haveMSE && mode !== "hls";
    const useMSE = (!nativeHLS || query.has("mse")) && haveMSE;
    const modeLabel = document.getElementById("mode");
    let current = null;
    let generation = 0;
    // Streams WebRTC failed for: they play as HLS from then on.
    const notWebRTC = new Set();

    function play(stream) {
      current = stream.id;
      generation += 1;
      closePeer();
      // The board's newest picture until the stream's own first frame is shown.
      video.poster = posterURL && stream.state === "live" ? posterURL + "?at=" + Date.now() : "";
      if (mode === "webrtc" && whepURL && stream.state === "live" && !notWebRTC.has(stream.id)) {
        const mine = generation;
        video.dataset.player = "webrtc";
        modeLabel.textContent = "WebRTC";
        playWebRTC(stream, mine).catch(e => {
          if (mine !== generation) return;
          closePeer();
          notWebRTC.add(stream.id);
          info.textContent = "WebRTC: " + e.message + "; playing LL-HLS";
          play(stream);
        });
        return;
      }
      video.srcObject = null;
      modeLabel.textContent = lowLatency && stream.state === "live" ? "LL-HLS" : "HLS";
      if (lowLatency && stream.state === "live") {
        video.dataset.player = "mse-ll";
        playWithMSE(stream.playlist, generation, true).catch(e => { info.textContent = "MSE: " + e.message; current = null; });
      } else if (useMSE) {
        video.dataset.player = "mse";
        playWithMSE(stream.playlist, generation, false).catch(e => { info.textContent = "MSE: " + e.message; current = null; });
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
    // reloading the playlist every half target duration until ENDLIST; or, when the
    // playlist has parts and low latency is wanted, part by part (playParts).
    async function playWithMSE(multivariant, mine, wantParts) {
      const top = await text(multivariant);
      // A quality ladder: the browser's own HLS chooses among the rungs where it has one.
      if (top.includes("#EXT-X-MEDIA:TYPE=AUDIO")) {
        if (nativeHLS && !query.has("mse")) {
          video.dataset.player = "native";
          video.src = multivariant;
          video.play().catch(() => {});
          return;
        }
        video.dataset.player = "mse-ladder";
        return playLadder(multivariant, top, mine);
      }
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
      if (wantParts) {
        const first = await text(media);
        if (first.includes("#EXT-X-PART-INF:") && !first.includes("#EXT-X-ENDLIST")) return playParts(media, first, source, buffer, mine);
      }
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

    __LADDER_PLAYER__

    __WEBRTC_PLAYER__

    // Low-latency HLS (RFC 8216bis §6.3.8): start at the last independent part at least
    // PART-HOLD-BACK from the live end, then ask for the hinted part (the server holds the
    // request until it is made) and, once it is in, for the playlist that lists it
    // (a blocking reload, delta-updated with _HLS_skip) to learn the next hint.
    function parseParts(playlist) {
      const lines = playlist.split("\n");
      let msn = parseInt((playlist.match(/#EXT-X-MEDIA-SEQUENCE:(\d+)/) || [])[1] || "0", 10);
      msn += parseInt((playlist.match(/#EXT-X-SKIP:SKIPPED-SEGMENTS=(\d+)/) || [])[1] || "0", 10);
      const parts = [];
      for (const line of lines) {
        if (line.startsWith("#EXT-X-PART:")) {
          parts.push({ uri: line.match(/URI="([^"]+)"/)[1], duration: parseFloat(line.match(/DURATION=([\d.]+)/)[1]),
                       independent: line.includes("INDEPENDENT=YES"), msn });
        } else if (line && !line.startsWith("#")) {
          msn += 1;
        }
      }
      const hint = (playlist.match(/#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"/) || [])[1];
      const holdBack = parseFloat((playlist.match(/PART-HOLD-BACK=([\d.]+)/) || [])[1] || "1");
      return { parts, hint, holdBack, ended: playlist.includes("#EXT-X-ENDLIST") };
    }
    const partNumbers = uri => uri.match(/(\d+)\.(\d+)\.m4s$/).slice(1).map(Number);

    async function playParts(media, playlist, source, buffer, mine) {
      const map = playlist.match(/#EXT-X-MAP:URI="([^"]+)"/)[1];
      await append(buffer, await bytes(resolve(map, media)));
      let state = parseParts(playlist);
      // The last independent part with at least PART-HOLD-BACK of parts after it.
      let start = 0, after = 0;
      for (let i = state.parts.length - 1; i >= 0; i--) {
        after += state.parts[i].duration;
        if (state.parts[i].independent) { start = i; if (after >= state.holdBack) break; }
      }
      for (const part of state.parts.slice(start)) await append(buffer, await bytes(resolve(part.uri, media)));
      if (buffer.buffered.length) video.currentTime = Math.max(buffer.buffered.start(0), buffer.buffered.end(0) - state.holdBack);
      video.play().catch(() => {});
      let hint = state.hint;
      while (mine === generation && hint) {
        const response = await fetch(resolve(hint, media));
        if (response.ok) {
          await append(buffer, await response.arrayBuffer());
          const [msn, part] = partNumbers(hint);
          playlist = await text(media + "?_HLS_msn=" + msn + "&_HLS_part=" + part + "&_HLS_skip=YES");
        } else {
          // The hint will not be made (a discontinuity, or the end): the playlist says.
          playlist = await text(media);
        }
        state = parseParts(playlist);
        if (state.ended) { if (mine === generation) source.endOfStream(); return; }
        hint = state.hint;
        // Keep PART-HOLD-BACK from the newest part: a little faster while further behind
        // (a part came late), a jump back after a stall.
        const end = buffer.buffered.length ? buffer.buffered.end(buffer.buffered.length - 1) : 0;
        const behind = end - video.currentTime;
        if (behind > state.holdBack + 2) video.currentTime = end - state.holdBack;
        video.playbackRate = behind > state.holdBack + 0.25 ? 1.1 : 1;
        if (buffer.buffered.length && video.currentTime - buffer.buffered.start(0) > 90) {
          buffer.remove(buffer.buffered.start(0), video.currentTime - 60);
          await new Promise(ok => buffer.addEventListener("updateend", ok, { once: true }));
        }
      }
    }

    // A player error (a stall, or a browser's live-HLS engine giving up after a pause)
    // leaves the page dead; start the newest stream again instead.
    video.addEventListener("error", () => {
      info.textContent = "playback error " + (video.error && video.error.code) + ", retrying";
      current = null;
    });
    // Why WebRTC gave way stays in view; other notes go once the picture plays.
    video.addEventListener("playing", () => { if (!info.textContent.startsWith("WebRTC")) info.textContent = ""; });
    // Which rung plays: its picture size, as the decoder reports it.
    const rungLabel = document.getElementById("rung");
    video.addEventListener("resize", () => {
      video.dataset.rung = video.videoWidth + "x" + video.videoHeight;
      rungLabel.textContent = video.dataset.rung;
    });
    // A camera interruption (EXT-X-DISCONTINUITY) leaves a hole in the media MSE holds:
    // waiting at its edge, play on from the next range.
    video.addEventListener("waiting", () => {
      const ranges = video.buffered;
      for (let i = 1; i < ranges.length; i++) {
        if (video.currentTime >= ranges.end(i - 1) - 0.1 && video.currentTime < ranges.start(i)) {
          video.currentTime = ranges.start(i);
          return;
        }
      }
    });

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
          // Low latency starts as soon as a segment is in (PART-HOLD-BACK is a second).
          const holdBack = lowLatency ? 0 : 3 * (newest.target_duration || 2);
          const ready = newest.state === "ended" || lowLatency ? newest.segments > 0 : newest.duration >= holdBack;
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

    /// WHEP (draft-ietf-wish-whep): a receive-only offer, the board's answer with every
    /// candidate (ICE-lite, no trickle), the picture as soon as it is decoded. The first
    /// picture comes at the stream's next IDR: within 3 s, or a segment and a half where
    /// IDRs are further apart; otherwise this throws and the page plays LL-HLS.
    static let webrtcPlayer = #"""
    let peer = null;
    function closePeer() {
      if (!peer) return;
      const { pc, resource } = peer;
      peer = null;
      pc.close();
      if (resource) fetch(resource, { method: "DELETE", keepalive: true }).catch(() => {});
    }
    window.addEventListener("pagehide", closePeer);
    async function playWebRTC(stream, mine) {
      const pc = new RTCPeerConnection();
      peer = { pc, resource: null };
      pc.addTransceiver("video", { direction: "recvonly" });
      // ?audio=0: the picture alone, shown the moment it is decoded (with sound, the
      // browser holds it as long as it holds the sound, to keep them together).
      if (query.get("audio") !== "0") pc.addTransceiver("audio", { direction: "recvonly" });
      const media = new MediaStream();
      pc.ontrack = e => {
        media.addTrack(e.track);
        video.srcObject = media;
        video.play().catch(() => {});
      };
      await pc.setLocalDescription(await pc.createOffer());
      const response = await fetch(whepURL + "/" + encodeURIComponent(stream.id), {
        method: "POST", headers: { "Content-Type": "application/sdp" }, body: pc.localDescription.sdp });
      const answer = await response.text();
      if (response.status !== 201) throw new Error(response.status + " " + answer.trim());
      if (peer && peer.pc === pc) peer.resource = new URL(response.headers.get("Location"), response.url).href;
      await pc.setRemoteDescription({ type: "answer", sdp: answer });
      const seconds = Math.max(3, 1.5 * (stream.target_duration || 2));
      const deadline = Date.now() + 1000 * seconds;
      while (mine === generation && Date.now() < deadline) {
        if (video.readyState >= 2 && video.videoWidth > 0) return;
        await sleep(100);
      }
      if (mine === generation) throw new Error("no picture within " + seconds + " s");
    }
    """#
}
