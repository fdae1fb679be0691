/* Latency hiding: "Try it" — resident warps vs latency, Little's law capped by occupancy (model.latency). */
"use strict";

TW.register({
  id: "latency",
  title: "Latency hiding: try it",
  short: "Latency hiding",
  source: "model.latency.warps_to_hide_memory / warps_to_hide_issue / async_in_flight · /api/latency",
  lede: [
    "Up to 64 warps can be resident on a Hopper SM, each holding its own registers, but only about 4 issue an " +
      "instruction per cycle, one per partition's scheduler. A warp waiting on memory is simply skipped: switching " +
      "costs nothing, because its registers stay put.",
    "How many warps are enough? Little's law: work in flight = throughput × latency. Once some warp is always ready, " +
      "more occupancy does nothing. Hopper's other way is one block per SM with asynchronous copies: the bytes in " +
      "flight then come from the ring buffer, not from warps.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const kindSel = TW.select({ key: "lat-kind", label: "what the warps wait on", value: "memory",
      options: [["memory", "HBM loads"], ["issue", "arithmetic (dependent FMAs)"]], onChange: () => {
        const mem = kindSel.value === "memory";
        latSl.setMax(mem ? 1500 : 64);
        latSl.set(mem ? 600 : 4);
        wSel.node.hidden = !mem;
        update();
      } });
    const latSl = TW.slider({ key: "lat-latency", label: "latency (cycles, a model figure)", min: 1, max: 1500, value: 600, onInput: () => update() });
    const thrSl = TW.slider({ key: "lat-threads", label: "threads per block", min: 32, max: 1024, step: 32, value: 128, onInput: () => update() });
    const regSl = TW.slider({ key: "lat-registers", label: "registers per thread", min: 16, max: 255, value: 128, onInput: () => update() });
    const wSel = TW.select({ key: "lat-width", label: "bytes per thread per load", value: "16", options: [["4", "4 (float)"], ["8", "8 (float2)"], ["16", "16 (float4)"]], onChange: () => update() });
    body.append(el("div", { class: "controls" }, kindSel.node, latSl.node, thrSl.node, regSl.node, wSel.node));
    const st = {
      need: TW.stat("lat-needed", "warps needed per SM"),
      res: TW.stat("lat-resident", "resident warps (occupancy)"),
      hid: TW.stat("lat-hidden", "throughput reached"),
      fly: TW.stat("lat-inflight", "in flight needed per SM"),
      asy: TW.stat("lat-async", "TMA ring: bytes in flight"),
    };
    const fig = el("div", { class: "figure" });
    const curve = el("div", { class: "figure" });
    const note = el("div");
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      el("div", { class: "cols even" }, el("div", {}, fig, note),
        el("div", {}, el("div", { class: "caption" }, "throughput reached over block size (registers fixed)"), curve)));

    function draw(d) {
      const c = d.current;
      const W = 460, H = 110, left = 10, cw = (W - 20) / c.max_warps;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "warp slots" });
      g.append(s("text", { x: left, y: 14, "font-size": 12, "font-weight": 700 }, `${c.max_warps} warp slots of one SM`));
      for (let w = 0; w < c.max_warps; w++) {
        g.append(s("rect", { class: "cell-anim", x: left + w * cw, y: 24, width: cw - 1, height: 30, rx: 2,
          fill: w < c.resident_warps ? (w < c.warps_needed ? "#2563eb" : "#93b4f5") : "#e6e9ef" }));
      }
      const nx = left + Math.min(c.warps_needed, c.max_warps) * cw;
      g.append(s("line", { x1: nx, x2: nx, y1: 18, y2: 62, stroke: "#e8590c", "stroke-width": 2.5 }),
        s("text", { x: Math.min(nx, W - 150), y: 78, class: "small", style: { fill: "#e8590c" } },
          c.warps_needed > c.max_warps ? `needed: ${c.warps_needed} (more than the SM holds)` : `needed: ${c.warps_needed}`),
        s("text", { x: left, y: 98, class: "small" }, `resident: ${c.resident_warps} (limited by ${c.limiter}); pale = resident beyond what latency needs`));
      TW.mount(fig, g);
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const d = await TW.api("latency", { gpu: ctx.gpu, kind: kindSel.value, latency: latSl.value, threads: thrSl.value, registers: regSl.value, width: wSel.value });
      return () => {
        const c = d.current;
        st.need.set(fmt.int(c.warps_needed));
        st.res.set(fmt.int(c.resident_warps));
        st.hid.set(fmt.pct(c.hidden_fraction), c.hidden_fraction >= 1 ? "ok" : "hot");
        st.fly.set(d.kind === "memory" ? fmt.bytes(Math.round(c.in_flight_needed)) : `${fmt.fixed(c.in_flight_needed, 0)} instr.`);
        st.asy.set(fmt.bytes(d.async.bytes_in_flight), d.async.covers ? "ok" : "hot");
        draw(d);
        TW.mount(note, TW.prose([
          d.kind === "memory"
            ? `${fmt.fixed(c.throughput_per_cycle, 1)} B/cycle per SM × ${fmt.int(c.latency_cycles)} cycles = ${fmt.bytes(Math.round(c.in_flight_needed))} in flight; one warp keeps ${fmt.bytes(c.per_warp)} in flight, so ${c.warps_needed} warps are needed.`
            : `${fmt.fixed(c.throughput_per_cycle, 0)} instructions per cycle per SM × ${fmt.int(c.latency_cycles)} cycles of latency = ${fmt.fixed(c.in_flight_needed, 0)} in flight: ${c.warps_needed} warps.`,
          `One block per SM with a ${d.async.stages}-stage ring of ${fmt.bytes(d.async.stage_bytes)} tiles keeps ${fmt.bytes(d.async.bytes_in_flight)} in flight against ${fmt.bytes(Math.round(d.async.bytes_needed))} needed: ${d.async.covers ? "enough, with few warps" : "not enough"}.`,
        ]));
        TW.mount(curve, TW.chart({
          width: 460, height: 190, points: d.curve, x: (p) => p.threads, y: (p) => p.hidden_fraction, yMax: 1, marker: thrSl.value,
          xLabel: "threads per block", yLabel: "throughput", yFormat: (v) => fmt.pct(v, 0), color: "#0f9d76",
        }));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
