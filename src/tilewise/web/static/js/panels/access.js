/* Warp access: 32 lanes -> addresses -> sectors (global) or banks (shared), counted by tilewise.sim. */
"use strict";

TW.register({
  id: "access",
  title: "A warp's 32 addresses: sectors and banks",
  short: "Warp access",
  source: "tilewise.sim.analyze_access (Nsight Compute's counts on an H200) · /api/access",
  lede: [
    "A warp's 32 threads issue their memory requests together, and the hardware looks at that batch of addresses. " +
      "In global memory, 32 threads reading 128 consecutive bytes merge into one transfer of four 32-byte sectors; " +
      "scattered addresses split into as many as 32.",
    "Shared memory has 32 banks, each 4 bytes wide; the n-th 4-byte word lives in bank n % 32, and a bank serves one " +
      "address per cycle. Different addresses in one bank queue up (a bank conflict); the same address is a broadcast. " +
      "Pick a pattern, or type an index expression in `lane`.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    let presets = null;
    const spaceSel = TW.select({ key: "acc-space", label: "memory", value: "shared", options: [["global", "global (sectors)"], ["shared", "shared (banks)"]], onChange: () => update() });
    const widthSel = TW.select({ key: "acc-width", label: "bytes per lane", value: "4", options: [["1", "1 (char)"], ["2", "2 (half)"], ["4", "4 (float)"], ["8", "8 (float2)"], ["16", "16 (float4)"]], onChange: () => update() });
    const presetSel = TW.select({ key: "acc-preset", label: "pattern", value: "column",
      options: [["contiguous", "contiguous: lane"], ["strided", "rows apart: lane * 1024"], ["column", "a tile's column: lane * 32"],
        ["padded", "padded: lane * 33"], ["swizzled", "swizzled: lane*32 + (lane^1)"], ["broadcast", "broadcast: 0"], ["custom", "your expression →"]],
      onChange: () => { if (presetSel.value !== "custom") exprIn.value = presets ? presets[presetSel.value].expr : exprIn.value; update(); } });
    const exprIn = el("input", { type: "text", value: presetSel.value === "custom" ? TW.fromUrl("acc-expr", "lane * 32", (v) => v.length <= 120) : "lane * 32",
      "aria-label": "index expression", dataset: { k: "acc-expr" } });
    let deb = null;
    exprIn.addEventListener("input", () => { presetSel.input.value = "custom"; clearTimeout(deb); deb = setTimeout(() => update(), 250); TW.remember(); });
    // The expression is part of the view only when it is the reader's own (a preset names its own).
    TW.track("acc-expr", () => (presetSel.value === "custom" ? exprIn.value : ""), (v) => { if (v) exprIn.value = v; }, "", () => update());
    const maskSel = TW.select({ key: "acc-active", label: "active lanes", value: "all", options: [["all", "all 32"], ["half", "lanes 0–15"], ["even", "even lanes"], ["one", "lane 0 only"]], onChange: () => update() });
    const opSel = TW.select({ key: "acc-op", label: "operation", value: "0", options: [["0", "load"], ["1", "store"], ["atomic", "atomicAdd"]], onChange: () => update() });
    body.append(el("div", { class: "controls" }, spaceSel.node, widthSel.node, presetSel.node,
      el("label", { class: "ctl" }, el("span", {}, "index of lane (elements)"), exprIn), maskSel.node, opSel.node));
    const st = { a: TW.stat("acc-main", "—"), b: TW.stat("acc-second", "—"), c: TW.stat("acc-ideal", "—"), d: TW.stat("acc-lanes", "active lanes") };
    const fig = el("div", { class: "figure" });
    const about = el("div", { class: "caption" });
    const meas = el("div");
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)), meas, fig, about);

    // Nsight Compute's counters for the pattern this access equals, where the H200 fixture has one.
    function drawMeasured(d) {
      const m = d.measured, c = d.counts;
      if (!m) {
        TW.mount(meas, el("p", { class: "caption", dataset: { k: "acc-measured-none" } },
          "No Nsight Compute pattern in the committed fixture equals this access (same lanes, bytes, mask and operation): the count above is the simulator's alone."));
        return;
      }
      const names = d.space === "global" ? [["sectors", "sectors"], ["requests", "requests"]] : [["wavefronts", "wavefronts"], ["bank_conflicts", "bank conflicts"]];
      TW.mount(meas, TW.measuredBox({
        key: "acc-measured", title: "Nsight Compute on the H200",
        rows: names.map(([k, label]) => ({ label, measured: fmt.int(m.counts[k]), model: fmt.int(c[k]), k })),
        src: { file: m.file, row: m.id, gpu: m.gpu, date: m.date, tools: `ncu ${m.ncu.replace(/^Version /, "")}` },
        note: `pattern "${m.name}", kernel ${m.kernel.split("(")[0]}`,
      }));
    }

    // A lane's index in at most 4 characters (k / M / G for thousands), squeezed to the 24-px box when needed.
    function shortIndex(v) {
      if (v < 1e4) return String(v);
      for (const [u, f] of [["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
        if (v >= f) { const x = v / f; return `${x < 10 ? x.toFixed(1).replace(/\.0$/, "") : Math.round(x)}${u}`; }
      }
      return String(v);
    }
    function laneLabel(x, l) {
      const label = shortIndex(l.index);
      const attrs = { x: x + 12, y: top + 25, "text-anchor": "middle", class: "mono", "font-size": 8, style: { fill: l.active ? "#dbe7ff" : "#8a93a3" } };
      if (label.length > 4) Object.assign(attrs, { textLength: 22, lengthAdjust: "spacingAndGlyphs" });
      return s("text", attrs, s("title", {}, `lane ${l.lane}: index ${l.index}`), label);
    }
    const top = 26;

    function draw(d) {
      const W = 940, lx = (i) => 20 + i * 28.5, laneH = 30, bottom = 170;
      const g = s("svg", { viewBox: `0 0 ${W} 10`, width: W, role: "img", "aria-label": "lanes to memory" });
      g.append(s("text", { x: 20, y: 14, "font-size": 12, "font-weight": 700 }, "lanes 0–31 of one warp, and the element each one reads"));
      // Memory units along the bottom: banks (shared) or the distinct sectors touched (global).
      const units = [];
      const unitX = new Map();
      if (d.space === "shared") {
        for (let b = 0; b < d.banks; b++) { units.push(b); unitX.set(b, lx(b) + 12); }
      } else {
        d.sectors.slice(0, 32).forEach((sec, i) => { units.push(sec); unitX.set(sec, lx(i) + 12); });
      }
      // Lines from lanes to their units.
      d.lanes.forEach((l) => {
        const x = lx(l.lane) + 12;
        const targets = d.space === "shared" ? l.banks : [l.sector];
        targets.forEach((t) => {
          if (!unitX.has(t)) return;
          g.append(s("line", { x1: x, y1: top + laneH, x2: unitX.get(t), y2: bottom, stroke: l.active ? "#2563eb" : "#d4d9e1", "stroke-width": l.active ? 1.2 : 0.8, opacity: 0.7 }));
        });
      });
      d.lanes.forEach((l) => {
        const x = lx(l.lane);
        g.append(s("rect", { x, y: top, width: 24, height: laneH, rx: 4, fill: l.active ? "#2563eb" : "#e6e9ef" }),
          s("text", { x: x + 12, y: top + 13, "text-anchor": "middle", "font-size": 10, "font-weight": 700, style: { fill: l.active ? "#fff" : "#8a93a3" } }, String(l.lane)),
          laneLabel(x, l));
      });
      let H;
      if (d.space === "shared") {
        // Each bank: one square per distinct 4-byte word the active lanes touch in it (same word = broadcast).
        let deepest = 1;
        units.forEach((b) => {
          const n = d.bank_words[b];
          deepest = Math.max(deepest, n);
          const x = unitX.get(b) - 12;
          g.append(s("rect", { x, y: bottom, width: 24, height: 16, rx: 3, fill: n ? "#1b2230" : "#e6e9ef" }),
            s("text", { x: x + 12, y: bottom + 12, "text-anchor": "middle", "font-size": 9, style: { fill: n ? "#fff" : "#8a93a3" } }, String(b)));
          for (let k = 0; k < Math.min(n, 32); k++) {
            g.append(s("rect", { x: x + 3, y: bottom + 20 + k * 5, width: 18, height: 4, rx: 1, fill: n > 1 ? "#e8590c" : "#0f9d76" }));
          }
        });
        H = bottom + 26 + Math.min(deepest, 32) * 5 + 20;
        g.append(s("text", { x: 20, y: H - 6, class: "small" }, "banks 0–31; under each, one bar per distinct word requested from it (a bank serves one word per cycle)"));
      } else {
        units.forEach((sec) => {
          const x = unitX.get(sec) - 12;
          g.append(s("rect", { x, y: bottom, width: 24, height: 22, rx: 3, fill: "#1b2230" }),
            s("text", { x: x + 12, y: bottom + 14, "text-anchor": "middle", class: "mono", "font-size": 8, style: { fill: "#fff" } }, shortIndex(sec)));
        });
        H = bottom + 44;
        g.append(s("text", { x: 20, y: H - 6, class: "small" },
          `the distinct ${d.sector_bytes}-byte sectors the active lanes touch${units.length >= 32 ? " (first 32 shown)" : ""}`));
      }
      g.setAttribute("viewBox", `0 0 ${W} ${H}`);
      g.setAttribute("height", H);
      TW.mount(fig, g);
    }

    // How the lanes go through the banks (tilewise.sim.shared_passes): phases of 128 bytes of lane data,
    // paired for 8/16-byte loads when every lane shares its address with lane i^1 or i^2 (measured on an H200).
    function passesText(d) {
      const p = d.passes;
      const n = p.passes.length;
      const each = p.passes.map((x) => `lanes ${x.first_lane}–${x.last_lane}: ${x.wavefronts} wavefront${x.wavefronts > 1 ? "s" : ""}`).join("; ");
      let why = "";
      if (p.phase_lanes < 32) {
        why = `${d.width}-byte lanes go in phases of ${p.phase_lanes} lanes (128 bytes). `;
        if (p.pairing) why += `Every active lane reads what lane ${p.pairing.replace("i", "its")} reads, so two phases go together. `;
        else if (!d.store) why += "No pairing of lanes by i^1 or i^2, so each phase goes alone. ";
      }
      return `${why}${n} pass${n === 1 ? "" : "es"} — ${each}.`;
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const params = { space: spaceSel.value, width: widthSel.value, active: maskSel.value,
        store: opSel.value === "1" ? "1" : "0", atomic: opSel.value === "atomic" ? "1" : "0" };
      if (presetSel.value === "custom") params.expr = exprIn.value;
      else params.preset = presetSel.value;
      const d = await TW.api("access", params);
      return () => {
        presets = d.presets;
        if (d.preset !== "custom") exprIn.value = d.expr;
        const c = d.counts;
        if (d.space === "global") {
          st.a.set(fmt.int(c.sectors), c.sectors > c.ideal ? "hot" : "ok");
          st.a.node.querySelector(".l").textContent = "sectors";
          st.b.set(fmt.int(c.requests));
          st.b.node.querySelector(".l").textContent = "requests";
          st.c.set(fmt.int(c.ideal));
          st.c.node.querySelector(".l").textContent = "ideal sectors";
        } else {
          st.a.set(fmt.int(c.wavefronts), c.wavefronts > c.ideal ? "hot" : "ok");
          st.a.node.querySelector(".l").textContent = "wavefronts (cycles)";
          st.b.set(fmt.int(c.bank_conflicts), c.bank_conflicts ? "hot" : "ok");
          st.b.node.querySelector(".l").textContent = "bank conflicts";
          st.c.set(fmt.int(c.ideal));
          st.c.node.querySelector(".l").textContent = "ideal wavefronts";
        }
        st.d.set(fmt.int(c.active_lanes));
        about.textContent = d.preset !== "custom" ? `${d.presets[d.preset].about}.` : `index = ${d.expr}; address = base + index × ${d.width} bytes.`;
        if (d.passes) about.textContent += " " + passesText(d);
        if (d.atomic) about.textContent += " An atomic never merges lanes on one address: " +
          (d.space === "global" ? "per 32-byte sector, the busiest address's lanes go one after another." :
            "each bank serves its lanes one at a time, same word or not (measured on an H200).");
        drawMeasured(d);
        draw(d);
      };
    });
    update();
  },
});
