/* Register budget: N and head dim -> registers per thread against 255 (model.tensorcore). */
"use strict";

TW.register({
  id: "registers",
  title: "Registers and shared memory: N's upper bound",
  short: "Register budget",
  source: "model.tensorcore.attention_tile_budget / register_budget / setmaxnreg_split · /api/registers",
  lede: [
    "Shared memory sets N's lower bound; registers set its upper bound. A consumer warpgroup's 128 threads hold " +
      "S [64, N] in fp32 (N/2 registers each) and the output accumulator O [64, d] (d/2), plus P, the softmax " +
      "statistics and addresses, against a cap of 255 per thread.",
    "Shared memory holds Q and a ring of K/V tiles against 227 KB per block, which sets how deep the pipeline can be. " +
      "setmaxnreg moves registers from the producer to the consumers, which is where the accumulators live.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const nSl = TW.slider({ key: "reg-n", label: "N (KV tile rows)", min: 16, max: 256, step: 16, value: 128, onInput: () => update() });
    const dSel = TW.select({ key: "reg-d", label: "head dim d", value: 128, options: [64, 96, 128, 192, 256].map((v) => [v, String(v)]), onChange: () => update() });
    const stSl = TW.slider({ key: "reg-stages", label: "K/V stages in shared memory", min: 1, max: 8, value: 2, onInput: () => update() });
    body.append(el("div", { class: "controls" }, nSl.node, dSel.node, stSl.node));
    const st = {
      acc: TW.stat("reg-acc", "S + O accumulators per thread"),
      total: TW.stat("reg-total", "registers per thread, in all"),
      head: TW.stat("reg-headroom", "headroom to the cap"),
      maxn: TW.stat("reg-maxn", "largest N that fits"),
      smem: TW.stat("reg-smem", "shared memory per block"),
      maxst: TW.stat("reg-maxstages", "deepest ring that fits"),
    };
    const regFig = el("div", { class: "figure" });
    const curveFig = el("div", { class: "figure" });
    const note = el("div");
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      el("div", { class: "cols even" }, el("div", {}, regFig, note), el("div", {}, el("div", { class: "caption" }, "registers per thread over N, with the cap"), curveFig)));

    function stacked(g, y, label, segs, limit, limitLabel, unitFmt) {
      const W = 460, left = 96, right = 16;
      const total = segs.reduce((a, b) => a + b[0], 0);
      const max = Math.max(limit, total) * 1.04;
      const sx = (v) => (v / max) * (W - left - right);
      g.append(s("text", { x: left - 8, y: y + 17, "text-anchor": "end", "font-size": 12, "font-weight": 700 }, label));
      let x = left;
      segs.forEach(([v, color, text]) => {
        if (v <= 0) return;
        g.append(s("rect", { class: "cell-anim", x, y, width: Math.max(1, sx(v)), height: 26, fill: color }, s("title", {}, `${text}: ${unitFmt(v)}`)));
        if (sx(v) > 30) g.append(s("text", { x: x + sx(v) / 2, y: y + 17, "text-anchor": "middle", "font-size": 10.5, "font-weight": 700, style: { fill: "#fff" } }, text));
        x += sx(v);
      });
      const lx = left + sx(limit);
      g.append(s("line", { x1: lx, x2: lx, y1: y - 6, y2: y + 32, stroke: "#b42318", "stroke-width": 2 }),
        s("text", { x: lx - 3, y: y + 44, "text-anchor": "end", class: "small", style: { fill: "#b42318" } }, limitLabel));
    }

    const hopperOnly = el("p", { class: "err" }, "wgmma is Hopper's instruction: pick an H100 or H200 in the GPU menu.");
    hopperOnly.hidden = true;
    body.prepend(hopperOnly);
    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const info = ctx.gpuInfo();
      hopperOnly.hidden = !info || info.wgmma;
      if (info && !info.wgmma) return () => {};
      const d = await TW.api("registers", { gpu: ctx.gpu, n: nSl.value, head_dim: dSel.value, stages: stSl.value });
      return () => {
        const r = d.budget.registers, m = d.budget.smem;
        st.acc.set(fmt.fixed(r.accumulators, 0));
        st.total.set(`${fmt.fixed(r.total, 0)} / ${r.limit}`, r.fits ? "ok" : "hot");
        st.head.set(fmt.fixed(r.headroom, 0), r.fits ? "ok" : "hot");
        st.maxn.set(fmt.int(r.max_n));
        st.smem.set(fmt.bytes(m.total_bytes), m.fits ? "ok" : "hot");
        st.maxst.set(fmt.int(m.max_stages));
        const g = s("svg", { viewBox: "0 0 460 150", width: 460, height: 150, role: "img", "aria-label": "budgets" });
        stacked(g, 14, "registers", [[r.s, "#8b5cf6", "S"], [r.o, "#2563eb", "O"], [r.p, "#0ea5e9", "P"], [r.stats, "#10b981", "stats"], [r.addresses, "#9aa3b2", "addr"]],
          r.limit, `cap ${r.limit} per thread`, (v) => fmt.fixed(v, 1));
        stacked(g, 86, "shared mem", [[m.q_bytes, "#f59e0b", "Q"], ...Array.from({ length: m.stages }, (_, i) => [m.kv_stage_bytes, i % 2 ? "#2563eb" : "#60a5fa", `K,V ${i + 1}`])],
          m.limit_bytes, `${fmt.bytes(m.limit_bytes)} per block`, fmt.bytes);
        TW.mount(regFig, g);
        TW.mount(note, TW.prose([
          `S ${fmt.fixed(r.s, 0)} + O ${fmt.fixed(r.o, 0)} = ${fmt.fixed(r.accumulators, 0)} accumulator registers per thread; with P, statistics and ~${d.address_registers_modelled} for addresses (a model figure) the total is ${fmt.fixed(r.total, 0)} of ${r.limit}.`,
          `With 1 producer + 2 consumer warpgroups, setmaxnreg lets the producer drop to ${d.setmaxnreg.producer_regs} and the consumers rise to ${d.setmaxnreg.consumer_regs} (an even split would give ${d.setmaxnreg.even_split}).`,
        ]));
        TW.mount(curveFig, TW.chart({
          width: 460, height: 190, step: false, points: d.curve, x: (p) => p.block_n, y: (p) => p.total, marker: r.block_n,
          hline: r.limit, hlineLabel: `cap ${r.limit}`, yMax: Math.max(r.limit * 1.25, ...d.curve.map((p) => p.total)), xLabel: "N", yLabel: "registers per thread",
        }));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
