/* Compare three designs: discrete-event timelines of one SM from model.pipeline. */
"use strict";

TW.register({
  id: "pipeline",
  title: "Compare three designs",
  short: "Pipeline designs",
  source: "model.pipeline.compare / attention_tile_times · /api/pipeline",
  lede: [
    "The Tensor Cores go idle for three reasons: waiting for data, the consumer busy with something else, and prologue " +
      "and epilogue. Three designs run the same attention work on one SM: (a) load, then compute; (b) a ring buffer " +
      "whose producer loads tiles ahead; (c) two consumer warpgroups taking turns, so one's softmax overlaps the other's GEMM.",
    "Each bar below is an event of the model's simulation: loads, the Tensor Cores running consumer 0 or 1, and softmax " +
      "on the CUDA cores. Gaps in the Tensor-Core row are idle time. The per-tile times come from the GPU's published rates.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const hitSl = TW.slider({ key: "pipe-hit", label: "L2 hit rate for K/V", min: 0, max: 99, value: 90, format: (v) => `${v}%`, onInput: () => update() });
    const stSl = TW.slider({ key: "pipe-stages", label: "stages (ring buffer)", min: 1, max: 6, value: 2, onInput: () => update() });
    const tSl = TW.slider({ key: "pipe-tiles", label: "K/V tiles", min: 2, max: 16, value: 6, onInput: () => update() });
    const nSel = TW.select({ key: "pipe-n", label: "KV tile N (d = 128)", value: 128, options: [[64, "64"], [128, "128"], [176, "176"]], onChange: () => update() });
    body.append(el("div", { class: "controls" }, hitSl.node, stSl.node, tSl.node, nSel.node));
    const times = el("div", { class: "stats" });
    const fig = el("div", { class: "figure" });
    const meas = el("div");
    body.append(times, meas, fig, el("div", { class: "legend" },
      [["#60a5fa", "load (TMA)"], ["#8b5cf6", "Tensor Cores: consumer 0"], ["#0f9d76", "Tensor Cores: consumer 1"], ["#f59e0b", "softmax"], ["#9aa3b2", "epilogue"]]
        .map(([c, t]) => el("span", {}, el("i", { style: { background: c } }), t))));

    const UNIT = { load: "loads", tc: "Tensor Cores", wg0: "consumer 0", wg1: "consumer 1" };
    // A design with one consumer warpgroup draws all its GEMMs in consumer 0's colour; the model's
    // `consumer` field there counts tiles in flight, not warpgroups.
    const color = (e, multi) => (e.kind === "load" ? "#60a5fa" : e.kind === "mma" ? (multi && e.consumer === 1 ? "#0f9d76" : "#8b5cf6") : e.kind === "softmax" ? "#f59e0b" : "#9aa3b2");

    function draw(d) {
      const W = 940, left = 112, right = 90, rowH = 20;
      const span = Math.max(...d.designs.map((t) => t.makespan));
      const sx = (v) => left + (v / span) * (W - left - right);
      let y = 6;
      const g = s("svg", { viewBox: `0 0 ${W} 10`, width: W, role: "img", "aria-label": "timelines" });
      d.designs.forEach((t) => {
        g.append(s("text", { x: 0, y: y + 13, "font-size": 13, "font-weight": 700 }, t.title),
          s("text", { x: W, y: y + 13, "text-anchor": "end", class: "mono", "font-size": 12, "font-weight": 700,
            style: { fill: t.tensor_utilisation > 0.85 ? "#0f9d76" : "#e8590c" }, dataset: { k: `pipe-util-${t.design}` } },
            `TC busy ${fmt.pct(t.tensor_utilisation, 0)}`));
        y += 20;
        const multi = t.events.some((e) => e.unit === "wg1");
        const units = [...new Set(t.events.map((e) => e.unit))].sort((a, b) => ["load", "tc", "wg0", "wg1"].indexOf(a) - ["load", "tc", "wg0", "wg1"].indexOf(b));
        units.forEach((u) => {
          g.append(s("text", { x: left - 8, y: y + 14, "text-anchor": "end", "font-size": 11.5 }, UNIT[u] || u),
            s("rect", { x: left, y: y + 2, width: sx(t.makespan) - left, height: rowH - 4, fill: u === "tc" ? "#fdecec" : "#f3f4f7" }));
          t.events.filter((e) => e.unit === u).forEach((e) => {
            g.append(s("rect", { x: sx(e.start), y: y + 2, width: Math.max(0.8, sx(e.end) - sx(e.start) - 0.6), height: rowH - 4, rx: 2, fill: color(e, multi), dataset: { consumer: multi ? e.consumer : 0, kind: e.kind } },
              s("title", {}, `${e.kind} tile ${e.tile}${multi && e.consumer >= 0 ? `, consumer ${e.consumer}` : ""}: ${fmt.int(e.start)}–${fmt.int(e.end)} cycles`)));
          });
          y += rowH;
        });
        g.append(s("text", { x: sx(t.makespan) + 6, y: y - 6, class: "small" }, `${fmt.int(t.makespan)} cycles`));
        y += 14;
      });
      g.append(s("text", { x: left, y: y + 4, class: "small" }, "time → (same scale for all three; red background = Tensor Cores idle)"));
      y += 12;
      g.setAttribute("viewBox", `0 0 ${W} ${y}`);
      g.setAttribute("height", y);
      TW.mount(fig, g);
    }

    // The three designs measured as kernels on the H200 (benchmarks/results/h200/attention_fa3_designs.json).
    function drawMeasured(d) {
      const rows = d.measured || [];
      if (!rows.length) {
        TW.mount(meas, el("p", { class: "caption", dataset: { k: "pipe-measured-none" } }, d.gpu.key === "h200"
          ? "No measured kernels of these designs are committed; the timelines are the model's alone."
          : ["The three designs were measured as kernels on the H200: ", TW.button("show them", () => TW.useGpu && TW.useGpu("h200")), "."]));
        return;
      }
      TW.mount(meas, el("div", { class: "measured designs", dataset: { k: "pipe-measured" } },
        el("div", { class: "measured-head" }, el("strong", {}, "Measured as kernels"), " ",
          el("span", { class: "muted" }, [rows[0].gpu, rows[0].date, `torch ${rows[0].torch}, triton ${rows[0].triton}`].join(" · "))),
        el("table", { class: "kv measured-kv" },
          el("tr", {}, ["design", "block", "time", "TFLOP/s", "Tensor Cores active (ncu)", "model: Tensor Cores busy", "row"].map((h) => el("th", {}, h))),
          rows.map((r) => el("tr", { dataset: { k: `pipe-measured-${r.design}` } },
            el("td", {}, `(${r.design}) ${r.design_name}`), el("td", {}, r.block),
            el("td", { dataset: { k: `pipe-measured-${r.design}-ms` } }, `${fmt.fixed(r.measured_ms, 3)} ms`),
            el("td", { dataset: { k: `pipe-measured-${r.design}-tflops` } }, fmt.fixed(r.tflops, 1)),
            el("td", { dataset: { k: `pipe-measured-${r.design}-tc` } }, r.tc_active === null || r.tc_active === undefined ? "—" : fmt.pct(r.tc_active)),
            el("td", { dataset: { k: `pipe-measured-${r.design}-model` } }, fmt.pct(r.model_utilization_now)),
            el("td", {}, el("a", { href: `/api/row?${new URLSearchParams({ file: r.file, row: r.row })}`, target: "_blank", rel: "noopener" }, `${r.row}`))))),
        el("div", { class: "caption" }, `${rows[0].shape}, one kernel with three schedules; the timelines above are one SM at the sliders' `,
          `settings, the model column is the kernel model (model.pipeline.predict_kernel_designs) at the measured shape. From ${rows[0].file}; command: ${rows[0].command}`)));
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const d = await TW.api("pipeline", { gpu: ctx.gpu, hit: (hitSl.value / 100).toFixed(2), stages: stSl.value, tiles: tSl.value, n: nSel.value, head_dim: 128 });
      return () => {
        const tt = d.times;
        TW.mount(times,
          [["load per tile", `${fmt.int(tt.load)} cyc`], ["GEMMs per tile and consumer", `${fmt.int(tt.mma)} cyc`], ["softmax per tile and consumer", `${fmt.int(tt.softmax)} cyc`],
            ...d.designs.map((t) => [`${t.title.split(" ")[0]} Tensor Cores busy`, fmt.pct(t.tensor_utilisation, 1)])]
            .map(([l, v]) => el("div", { class: "stat" }, el("div", { class: "v" }, v), el("div", { class: "l" }, l))));
        draw(d);
        drawMeasured(d);
      };
    });
    ctx.onGpu(update);
    update();
  },
});
