/* L2 and HBM: M and the L2 hit rate -> effective intensity against the balance point (model.roofline). */
"use strict";

TW.register({
  id: "l2",
  title: "L2 and HBM: M, hit rate and the balance point",
  short: "L2 and HBM",
  source: "model.roofline.kv_tile_intensity / l2_reuse / hit_rate_for_compute_roof · /api/l2",
  lede: [
    "A KV tile is K and V, [N, d] each. A block with M rows of Q does 4·M·N·d FLOPs on 2·N·d·2 bytes: N and d " +
      "cancel, and each byte of KV buys M FLOPs. With M = 64 and every byte from HBM the Tensor Cores starve.",
    "But many Q blocks of one head read the same KV, so later blocks mostly hit L2, and HBM sees only the misses: the " +
      "intensity HBM sees is M / (1 − hit). Move M and the hit rate: on an H100 SXM (balance 295 FLOP/B) M = 64 needs about 78% hits.",
  ],
  build(body, ctx) {
    const { el, fmt } = TW;
    const mSl = TW.slider({ key: "l2-m", label: "M (rows of Q per block)", min: 16, max: 512, step: 16, value: 64, onInput: () => update() });
    const hSl = TW.slider({ key: "l2-hit", label: "L2 hit rate", min: 0, max: 99, step: 1, value: 80, format: (v) => `${v}%`, onInput: () => update() });
    body.append(el("div", { class: "controls" }, mSl.node, hSl.node));
    const st = {
      ai: TW.stat("l2-intensity", "FLOP per KV byte"),
      hbm: TW.stat("l2-hbm-intensity", "FLOP per HBM byte"),
      bal: TW.stat("l2-balance", "HBM balance (FLOP/B)"),
      need: TW.stat("l2-needed", "hit rate needed"),
      bound: TW.stat("l2-bound", "bound"),
      util: TW.stat("l2-util", "Tensor Cores busy, at most"),
    };
    const c1 = el("div", { class: "figure" }), c2 = el("div", { class: "figure" });
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      el("div", { class: "cols even" },
        el("div", {}, el("div", { class: "caption" }, "Tensor-Core utilisation bound over the L2 hit rate, at this M"), c1),
        el("div", {}, el("div", { class: "caption" }, "hit rate needed to reach the compute roof, over M"), c2)));

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const d = await TW.api("l2", { gpu: ctx.gpu, m: mSl.value, hit: (hSl.value / 100).toFixed(2) });
      return () => {
        const c = d.current;
        st.ai.set(fmt.fixed(c.intensity, 0));
        st.hbm.set(fmt.fixed(c.hbm_intensity, 0));
        st.bal.set(fmt.fixed(c.balance, 0));
        st.need.set(fmt.pct(c.needed_hit_rate), c.hit_rate >= c.needed_hit_rate ? "ok" : "hot");
        st.bound.set(c.bound === "compute" ? "compute" : "memory (HBM)", c.bound === "compute" ? "ok" : "hot");
        st.util.set(fmt.pct(c.tensor_utilisation), c.tensor_utilisation >= 1 ? "ok" : "hot");
        TW.mount(c1, TW.chart({
          width: 460, height: 200, step: false, points: d.over_hit, x: (p) => p.hit * 100, y: (p) => p.tensor_utilisation,
          yMax: 1, marker: c.hit_rate * 100, xLabel: "L2 hit rate (%)", yLabel: "utilisation", yFormat: (v) => fmt.pct(v, 0),
          hline: 1, color: "#8b5cf6",
        }));
        TW.mount(c2, TW.chart({
          width: 460, height: 200, step: false, points: d.over_m, x: (p) => p.m, y: (p) => p.needed_hit_rate,
          yMax: 1, marker: d.kv.block_m, xLabel: "M", yLabel: "hit rate needed", yFormat: (v) => fmt.pct(v, 0), color: "#e8590c",
        }));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
