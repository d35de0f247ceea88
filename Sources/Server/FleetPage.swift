import Layout
/// The page at a destination's root (`index.html`) when boards publish there: every board
/// `devices.json` lists, live ones first, each with its own viewer (`<device>/index.html`,
/// which plays its live stream and lists its past ones from its `streams.json`). Static:
/// it works from a plain bucket or web directory, with no server code.
public enum FleetPage {
    public static let html = Viewer.head.replacing("__TITLE__", with: "onair") + #"""
      header { padding: .6em 1em; }
      #boards { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 1em; padding: 0 1em 1em; }
      section h2 { font-size: 1em; margin: .3em 0; display: flex; gap: .6em; align-items: baseline; }
      .state { padding: .1em .5em; border-radius: .3em; background: #444; font-weight: normal; }
      .state.live { background: #c00; }
      .seen { color: #999; font-weight: normal; font-size: .9em; }
      iframe { border: 0; width: 100%; height: 560px; background: #000; }
    </style>
    </head>
    <body>
    <header><h1>onair</h1><span id="info">reading devices.json</span></header>
    <div id="boards"></div>
    <script>
    "use strict";
    const boards = document.getElementById("boards");
    const info = document.getElementById("info");
    const shown = new Map();  // board name → its section
    // A board's name is its folder: letters, digits and ._- (device.name), nothing to escape
    // in a URL; shown as text all the same.
    async function poll() {
      try {
        const response = await fetch("\#(StreamLayout.devices)", { cache: "no-store" });
        if (!response.ok) throw new Error("\#(StreamLayout.devices): HTTP " + response.status);
        const devices = (await response.json()).devices || [];
        devices.sort((a, b) => (b.live - a.live) || a.name.localeCompare(b.name));
        for (const device of devices) {
          let section = shown.get(device.name);
          if (!section) {
            section = document.createElement("section");
            section.dataset.device = device.name;
            const title = document.createElement("h2");
            const name = document.createElement("span");
            name.textContent = device.name;
            const state = document.createElement("span");
            state.className = "state";
            const seen = document.createElement("span");
            seen.className = "seen";
            title.append(name, state, seen);
            const frame = document.createElement("iframe");
            frame.src = device.page;
            frame.title = device.name;
            frame.allow = "autoplay; fullscreen";
            section.append(title, frame);
            shown.set(device.name, section);
            // Added once, in order (live boards first): moving an iframe would reload it.
            boards.append(section);
          }
          const state = section.querySelector(".state");
          state.textContent = device.live ? "live" : "off air";
          state.classList.toggle("live", device.live);
          section.querySelector(".seen").textContent = device.last_seen ? "seen " + device.last_seen.replace("T", " ").slice(0, 19) + " UTC" : "";
        }
        info.textContent = devices.length + (devices.length === 1 ? " board" : " boards");
      } catch (error) {
        info.textContent = String(error);
      }
    }
    poll();
    setInterval(poll, 10000);
    </script>
    </body>
    </html>
    """#
}
