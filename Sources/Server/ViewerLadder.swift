extension Viewer {
    /// The viewer's player for a quality ladder (rungs of pictures and one audio
    /// rendition, issue 20), put into the page's script. Native HLS chooses the rung
    /// itself; without it, Media Source Extensions play the rung the measured throughput
    /// affords, switching at segment boundaries (every rung is cut on the same frames, so
    /// segment k of one follows segment k − 1 of another), with the sound in a
    /// SourceBuffer of its own; each segment after the init its playlist names for it. The
    /// page shows the picture size that plays.
    static let ladderPlayer = #"""
    function parseLadder(top) {
      const lines = top.split("\n");
      const rungs = [];
      for (let i = 0; i + 1 < lines.length; i++) {
        if (!lines[i].startsWith("#EXT-X-STREAM-INF:")) continue;
        const attribute = name => (lines[i].match(new RegExp("[:,]" + name + "=(\"[^\"]*\"|[^,]*)")) || [])[1] || "";
        rungs.push({ uri: lines[i + 1], bandwidth: parseInt(attribute("BANDWIDTH"), 10),
                     codecs: attribute("CODECS").replace(/"/g, "").split(","), resolution: attribute("RESOLUTION") });
      }
      rungs.sort((a, b) => b.bandwidth - a.bandwidth);
      return { rungs, audio: (top.match(/#EXT-X-MEDIA:TYPE=AUDIO[^\n]*URI="([^"]+)"/) || [])[1] };
    }
    const segmentsOf = playlist => playlist.split("\n").filter(l => l && !l.startsWith("#"));
    const mapOf = playlist => (playlist.match(/#EXT-X-MAP:URI="([^"]+)"/) || [])[1];
    // The init each segment needs: a rung the heat dropped carries the next rung's
    // segments under that rung's EXT-X-MAP.
    function mapsOf(playlist) {
      let map = "";
      const maps = [];
      for (const line of playlist.split("\n")) {
        if (line.startsWith("#EXT-X-MAP:")) map = (line.match(/URI="([^"]+)"/) || [])[1];
        else if (line && !line.startsWith("#")) maps.push(map);
      }
      return maps;
    }

    async function trim(buffer) {
      // Keep a minute behind the play head; the rest would only fill the quota.
      if (buffer.buffered.length && video.currentTime - buffer.buffered.start(0) > 90) {
        buffer.remove(buffer.buffered.start(0), video.currentTime - 60);
        await new Promise(ok => buffer.addEventListener("updateend", ok, { once: true }));
      }
    }

    async function playLadder(multivariant, top, mine) {
      const { rungs, audio } = parseLadder(top);
      const videoCodecs = rungs[0].codecs.filter(c => !c.startsWith("mp4a")).join(",");
      const audioCodecs = rungs[0].codecs.filter(c => c.startsWith("mp4a")).join(",");
      const source = new MediaSource();
      video.src = URL.createObjectURL(source);
      await new Promise(ok => source.addEventListener("sourceopen", ok, { once: true }));
      const pictures = source.addSourceBuffer('video/mp4; codecs="' + videoCodecs + '"');
      const sound = audio ? source.addSourceBuffer('audio/mp4; codecs="' + audioCodecs + '"') : null;
      const soundURL = audio && resolve(audio, multivariant);
      // Start on the lowest rung and climb as the link allows (throughput, smoothed).
      let rung = rungs.length - 1, loaded = "", throughput = 0, next = 0, started = false, soundLoaded = false;
      while (mine === generation) {
        const media = resolve(rungs[rung].uri, multivariant);
        const playlist = await text(media);
        const soundPlaylist = soundURL ? await text(soundURL) : "";
        const segments = segmentsOf(playlist), maps = mapsOf(playlist), soundSegments = segmentsOf(soundPlaylist);
        const count = soundURL ? Math.min(segments.length, soundSegments.length) : segments.length;
        const ended = playlist.includes("#EXT-X-ENDLIST") && (!soundURL || soundPlaylist.includes("#EXT-X-ENDLIST"));
        const target = parseInt((playlist.match(/#EXT-X-TARGETDURATION:(\d+)/) || [])[1] || "2", 10);
        // A live stream starts three segments from its end (RFC 8216bis §6.3.3).
        if (!started && !ended) next = Math.max(next, count - 3);
        if (sound && !soundLoaded) { await append(sound, await bytes(resolve(mapOf(soundPlaylist), soundURL))); soundLoaded = true; }
        let switched = false;
        for (; next < count && mine === generation && !switched; next++) {
          const map = resolve(maps[next], media);
          if (loaded !== map) {
            await append(pictures, await bytes(map));
            loaded = map;
          }
          const began = performance.now();
          const data = await bytes(resolve(segments[next], media));
          const bits = data.byteLength * 8 / Math.max((performance.now() - began) / 1000, 0.001);
          throughput = throughput ? 0.7 * throughput + 0.3 * bits : bits;
          await append(pictures, data);
          if (sound) await append(sound, await bytes(resolve(soundSegments[next], soundURL)));
          if (!started && pictures.buffered.length) {
            started = true;
            video.currentTime = pictures.buffered.start(0);
            video.play().catch(() => {});
          }
          await trim(pictures);
          if (sound) await trim(sound);
          // The next segment from the best rung the link affords, with a fifth to spare.
          const fits = rungs.findIndex(r => r.bandwidth < 0.8 * throughput);
          const wanted = fits < 0 ? rungs.length - 1 : fits;
          if (wanted !== rung) { rung = wanted; switched = true; }
        }
        if (switched) continue;
        if (ended && next >= count) { if (mine === generation) source.endOfStream(); return; }
        await sleep(target * 500);
      }
    }
    """#
}
