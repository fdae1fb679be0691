/* Tensor-Core feeding: "Drag N" — compute vs shared-memory cycles of one wgmma (model.tensorcore). */
"use strict";

TW.register({
  id: "tensorcore",
  title: "Feeding the Tensor Cores: drag N",
  short: "Tensor-Core feeding",
  source: "model.tensorcore.smem_feed / feed_table / wgmma · /api/tensorcore",
  lede: [
    "One wgmma is m64 nN k16: 2 × 64 × N × 16 FLOPs, which at 4096 FLOPs per cycle per SM takes 0.5 N cycles. " +
      "Its operands come from shared memory at 128 bytes per cycle (32 banks × 4 bytes): A is 64 × 16 × 2 bytes, " +
      "re-read by every instruction (16 cycles, a fixed cost), B is N × 16 × 2 bytes (0.25 N cycles).",
    "Compute must at least match the feed: 0.5 N ≥ 16 + 0.25 N, so N ≥ 64. Drag N: the fixed 16 cycles are spread " +
      "thinner as N grows but never disappear. With A from registers (RS, how FA3 feeds P to P·V) they vanish. " +
      "The operand path's real bandwidth is not published: these are order-of-magnitude figures.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const nSl = TW.slider({ key: "tc-n", label: "N (wgmma m64 nN k16)", min: 8, max: 256, step: 8, value: 64, onInput: () => update() });
    body.append(el("div", { class: "controls" }, nSl.node));
    const st = {
      compute: TW.stat("tc-compute", "compute cycles per wgmma"),
      a: TW.stat("tc-a-cycles", "A from shared memory (cycles)"),
      b: TW.stat("tc-b-cycles", "B from shared memory (cycles)"),
      ss: TW.stat("tc-ratio-ss", "compute / feed, SS"),
      rs: TW.stat("tc-ratio-rs", "compute / feed, RS", "ok"),
      even: TW.stat("tc-break-even", "break-even N (SS)"),
    };
    const bars = el("div", { class: "figure" });
    const curve = el("div", { class: "figure" });
    const eq = el("div");
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      el("div", { class: "cols even" }, el("div", {}, bars, eq), el("div", {}, el("div", { class: "caption" }, "compute / feed ratio for every legal N (≥ 1: shared memory keeps up)"), curve)));

    function drawBars(d) {
      const W = 460, H = 170, left = 120, right = 20;
      const max = Math.max(d.ss.compute_cycles, d.ss.feed_cycles, 1);
      const sx = (v) => (v / max) * (W - left - right);
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "cycles" });
      const row = (y, label, segs) => {
        g.append(s("text", { x: left - 8, y: y + 15, "text-anchor": "end", "font-size": 12 }, label));
        let x = left;
        segs.forEach(([v, color, text]) => {
          if (v <= 0) return;
          g.append(s("rect", { class: "cell-anim", x, y, width: Math.max(1, sx(v)), height: 22, rx: 3, fill: color }));
          if (sx(v) > 34) g.append(s("text", { x: x + sx(v) / 2, y: y + 15, "text-anchor": "middle", "font-size": 11, "font-weight": 700, style: { fill: "#fff" } }, text));
          x += sx(v);
        });
        g.append(s("text", { x: x + 5, y: y + 15, class: "mono", "font-size": 11 }, fmt.fixed(segs.reduce((a, b) => a + b[0], 0), 0)));
      };
      row(10, "Tensor Cores", [[d.ss.compute_cycles, "#8b5cf6", "0.5 N"]]);
      row(48, "feed, SS", [[d.ss.a_cycles, "#e8590c", "A: 16"], [d.ss.b_cycles, "#2563eb", "B: 0.25 N"]]);
      row(86, "feed, RS", [[d.rs.b_cycles, "#2563eb", "B: 0.25 N"]]);
      g.append(s("text", { x: left, y: 140, class: "small" }, `cycles per wgmma at N = ${d.n}; shared memory delivers ${d.ss.smem_bytes_per_cycle} B/cycle`));
      TW.mount(bars, g);
    }

    const hopperOnly = el("p", { class: "err" }, "wgmma is Hopper's instruction: pick an H100 or H200 in the GPU menu.");
    hopperOnly.hidden = true;
    body.prepend(hopperOnly);
    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const info = ctx.gpuInfo();
      hopperOnly.hidden = !info || info.wgmma;
      if (info && !info.wgmma) return () => {};
      const d = await TW.api("tensorcore", { gpu: ctx.gpu, n: nSl.value });
      return () => {
        st.compute.set(fmt.fixed(d.ss.compute_cycles, 0));
        st.a.set(fmt.fixed(d.ss.a_cycles, 0));
        st.b.set(fmt.fixed(d.ss.b_cycles, 0));
        st.ss.set(fmt.fixed(d.ss.ratio, 2), d.ss.keeps_up ? "ok" : "hot");
        st.rs.set(fmt.fixed(d.rs.ratio, 2), d.rs.keeps_up ? "ok" : "hot");
        st.even.set(fmt.fixed(d.ss.break_even_n, 0));
        drawBars(d);
        TW.mount(eq, TW.prose([
          `${fmt.fixed(d.ss.compute_cycles, 0)} compute cycles ${d.ss.keeps_up ? "≥" : "<"} ${fmt.fixed(d.ss.a_cycles, 0)} + ${fmt.fixed(d.ss.b_cycles, 0)} feed cycles: ` +
            (d.ss.keeps_up ? "shared memory keeps up." : "the Tensor Cores wait on shared memory."),
          `The ratio tends to ${fmt.fixed(d.ss.limit_ratio, 0)} as N grows; wgmma pins M at 64, so A's cost is never amortised over M.`,
        ]));
        TW.mount(curve, TW.chart({
          width: 460, height: 190, step: false, x: (p) => p.n, y: (p) => p.ratio, yMax: 2.2, marker: d.n, hline: 1, hlineLabel: "keeps up",
          series: [{ points: d.table.ss, color: "#e8590c", label: "SS: A and B from shared memory" }, { points: d.table.rs, color: "#0f9d76", label: "RS: A from registers" }],
          xLabel: "N", yLabel: "compute / feed", yFormat: (v) => fmt.fixed(v, 1),
        }));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
