/* Decode padding: a batch slider -> MMA fragment fill and the decode GEMM on the roofline. */
"use strict";

TW.register({
  id: "decode",
  title: "Decode: fragment padding and the roofline",
  short: "Decode padding",
  source: "model.decode.decode_gemm_point / fragment_fill / batch_for_compute_bound · /api/decode",
  lede: [
    "In decode each sequence brings one new token, so the GEMM's M is the batch. A Tensor-Core fragment has 16 rows " +
      "(wgmma: 64); rows without data are padded with zeros and computed anyway. At batch 1, 1 of 16 rows is useful: about 6%.",
    "Filling the fragment is not the same as filling the Tensor Cores. The weights are read once per step whatever the " +
      "batch, so intensity grows about linearly with it: at batch 64 a bf16 GEMM does about 64 FLOP per byte, still far " +
      "below the balance point. Drag the batch and watch where the point sits.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const batch = TW.slider({ key: "dec-batch", label: "batch (M)", min: 1, max: 512, step: 1, value: 1, onInput: () => update() });
    const shapeSel = TW.select({ key: "dec-shape", label: "weight [K × N]", value: "8192,24576",
      options: [["8192,24576", "8192 × 24576 (decode GEMM)"], ["4096,14336", "4096 × 14336"], ["8192,8192", "8192 × 8192"]],
      onChange: () => update() });
    body.append(el("div", { class: "controls" }, batch.node, shapeSel.node));
    const st = {
      fill: TW.stat("dec-fill-mma", "useful rows, mma (16)", "hot"),
      fill64: TW.stat("dec-fill-wgmma", "useful rows, wgmma (64)", "hot"),
      ai: TW.stat("dec-intensity", "FLOP per HBM byte"),
      bal: TW.stat("dec-balance", "balance point (FLOP/B)"),
      bound: TW.stat("dec-bound", "bound"),
      util: TW.stat("dec-util", "Tensor-Core time busy, at best"),
      need: TW.stat("dec-need", "batch to reach the balance point"),
      floor: TW.stat("dec-floor", "roofline floor"),
      model: TW.stat("dec-model", "time model (advisor's top-1)"),
    };
    const fragFig = el("div", { class: "figure" });
    const roofFig = el("div", { class: "figure" });
    const meas = el("div");
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)), meas,
      el("div", { class: "cols even" },
        el("div", {}, el("h3", { class: "muted" }, "Fragments: rows with data vs zero padding"), fragFig),
        el("div", {}, el("h3", { class: "muted" }, "The decode GEMM on the roofline"), roofFig)));

    function drawFragments(d) {
      const W = 440, H = 190;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "fragments" });
      const b = d.problem.batch;
      [["mma", "mma / wmma: 16-row fragments", 10], ["wgmma", "wgmma: 64-row instructions", 100]].forEach(([key, label, y]) => {
        const f = d.fragments[key];
        const shown = Math.min(f.padded_rows, 128);
        const cw = (W - 20) / shown;
        g.append(s("text", { x: 10, y: y + 10, "font-size": 12, "font-weight": 700 }, label));
        for (let r = 0; r < shown; r++) {
          g.append(s("rect", { x: 10 + r * cw, y: y + 18, width: Math.max(0.8, cw - (cw > 3 ? 1 : 0)), height: 34,
            fill: r < b ? "#2563eb" : "#e6e9ef" }));
        }
        for (let fr = 1; fr * f.rows < shown; fr++) {
          g.append(s("line", { x1: 10 + fr * f.rows * cw, x2: 10 + fr * f.rows * cw, y1: y + 14, y2: y + 56, stroke: "#1b2230", "stroke-width": 1.2 }));
        }
        g.append(s("text", { x: 10, y: y + 70, class: "small" },
          `${b} of ${f.padded_rows} rows carry data (${fmt.pct(f.fill)}) in ${f.fragments} fragment(s)` +
            (f.padded_rows > shown ? `; first ${shown} rows drawn` : "")));
      });
      TW.mount(fragFig, g);
    }

    function drawRoof(d) {
      const W = 460, H = 260, pad = { l: 86, r: 14, t: 14, b: 36 };
      const xs = [...d.roof.map((p) => p.intensity), ...d.series.map((p) => p.intensity)];
      const ys = [...d.roof.map((p) => p.attainable_flops), ...d.series.map((p) => p.attainable_flops)];
      const lx0 = Math.log10(Math.min(...xs)), lx1 = Math.log10(Math.max(...xs));
      const ly0 = Math.log10(Math.min(...ys)) - 0.2, ly1 = Math.log10(Math.max(...ys)) + 0.15;
      const sx = (v) => pad.l + ((Math.log10(v) - lx0) / (lx1 - lx0)) * (W - pad.l - pad.r);
      const sy = (v) => H - pad.b - ((Math.log10(v) - ly0) / (ly1 - ly0)) * (H - pad.t - pad.b);
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "roofline" });
      for (let e = Math.ceil(lx0); e <= Math.floor(lx1); e++) {
        g.append(s("line", { x1: sx(10 ** e), x2: sx(10 ** e), y1: pad.t, y2: H - pad.b, stroke: "#eceff3" }),
          s("text", { x: sx(10 ** e), y: H - pad.b + 14, "text-anchor": "middle", class: "small" }, fmt.si(10 ** e, "", 2)));
      }
      for (let e = Math.ceil(ly0); e <= Math.floor(ly1); e++) {
        g.append(s("line", { x1: pad.l, x2: W - pad.r, y1: sy(10 ** e), y2: sy(10 ** e), stroke: "#eceff3" }),
          s("text", { x: pad.l - 5, y: sy(10 ** e) + 3, "text-anchor": "end", class: "small" }, fmt.si(10 ** e, "FLOP/s", 2)));
      }
      g.append(s("path", { d: d.roof.map((p, i) => `${i ? "L" : "M"}${sx(p.intensity)},${sy(p.attainable_flops)}`).join(""),
        fill: "none", stroke: "#1b2230", "stroke-width": 2.2 }));
      const bal = d.current.balance;
      g.append(s("line", { x1: sx(bal), x2: sx(bal), y1: pad.t, y2: H - pad.b, stroke: "#e8590c", "stroke-dasharray": "4 3" }),
        s("text", { x: sx(bal) - 4, y: H - pad.b - 6, "text-anchor": "end", class: "small", style: { fill: "#e8590c" } }, `balance ${fmt.fixed(bal, 0)} FLOP/B`));
      d.series.forEach((p) => {
        g.append(s("circle", { cx: sx(p.intensity), cy: sy(p.attainable_flops), r: 3.2, fill: "#93b4f5" },
          s("title", {}, `batch ${p.batch}: ${fmt.fixed(p.intensity, 1)} FLOP/B`)));
        if ([1, 16, 64].includes(p.batch)) {
          g.append(s("text", { x: sx(p.intensity) + 5, y: sy(p.attainable_flops) + 12, class: "small" }, `b=${p.batch}`));
        }
      });
      // Measured on the H200: the same GEMM's benchmark rows, at the model's intensity for that batch.
      (d.measured || []).forEach((r) => {
        const b = Number(r.shape.split("x")[0]);
        const p = d.series.find((q) => q.batch === b);
        if (!p) return;
        const X = sx(p.intensity), Y = sy(r.tflops * 1e12);
        g.append(s("path", { d: `M${X},${Y - 5}L${X + 5},${Y}L${X},${Y + 5}L${X - 5},${Y}Z`, fill: "#0f9d76", class: "measured-pt" },
          s("title", {}, `measured on ${r.gpu}, batch ${b}: ${fmt.fixed(r.tflops, 1)} TFLOP/s (${r.file} row ${r.row})`)));
      });
      if ((d.measured || []).length) {
        // Legend in the empty lower-right corner (high intensity, low FLOP/s: no point lands there).
        const lx = W - pad.r - 196, ly = H - pad.b - 14;
        g.append(s("path", { d: `M${lx},${ly - 5}l5,5l-5,5l-5,-5z`, fill: "#0f9d76" }),
          s("text", { x: lx + 9, y: ly + 3.5, class: "small" }, "measured on the H200 (benchmark rows)"));
      }
      const c = d.current;
      g.append(s("circle", { cx: sx(c.intensity), cy: sy(c.attainable_flops), r: 6.5, fill: "#e8590c", stroke: "#fff", "stroke-width": 2 }));
      g.append(s("text", { x: (pad.l + W - pad.r) / 2, y: H - 6, "text-anchor": "middle", class: "small" }, "arithmetic intensity (FLOP per HBM byte), log scale"));
      TW.mount(roofFig, g);
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const [k, n] = shapeSel.value.split(",");
      const d = await TW.api("decode", { gpu: ctx.gpu, batch: batch.value, k, n });
      return () => {
        const c = d.current;
        st.fill.set(fmt.pct(c.fill_mma), c.fill_mma < 1 ? "hot" : "ok");
        st.fill64.set(fmt.pct(c.fill_wgmma), c.fill_wgmma < 1 ? "hot" : "ok");
        st.ai.set(fmt.fixed(c.intensity, 1));
        st.bal.set(fmt.fixed(c.balance, 0));
        st.bound.set(c.bound === "memory" ? "memory" : "compute", c.bound === "memory" ? "hot" : "ok");
        st.util.set(fmt.pct(c.tensor_utilisation));
        st.need.set(d.batch_for_compute_bound === null ? "never" : fmt.int(d.batch_for_compute_bound));
        st.floor.set(`${fmt.fixed(c.time_s * 1e6, 1)} µs`);
        const p = d.predicted;
        st.model.set(p ? `${fmt.fixed(p.model_ms * 1e3, 1)} µs (${p.model_binding})` : "—");
        drawFragments(d);
        drawRoof(d);
        const b = Number(batch.value);
        const [kk, nn] = shapeSel.value.split(",");
        const here = (d.measured || []).filter((r) => Number(r.shape.split("x")[0]) === b);
        TW.mount(meas, TW.gemmMeasured("dec-measured", here, d.gpu, `${b} × ${nn} × ${kk}`, d.measured));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
