/* MoE tile scheduler: tokens per expert -> tiles, the prefix sum, which program takes which tile. */
"use strict";

TW.register({
  id: "moe",
  title: "MoE: the persistent grouped GEMM's tile scheduler",
  short: "MoE scheduler",
  source: "model.waves.grouped_schedule / tile_owner / local_tile_coords / persistent_tiles / grouped_gemm_cost · /api/moe",
  lede: [
    "Each expert gets few tokens, so its matrices are small, sometimes with fewer tiles than SMs. Write the grouped " +
      "GEMM as a persistent kernel: launch as many programs as SMs, keep each resident, and let it loop over tiles.",
    "The experts share K and N but each has its own M. Take a prefix sum over their tile counts; whichever range a " +
      "global tile index falls into names its expert, found with a binary search. Click a tile to see the search. " +
      "The costs below compare one prologue per program (persistent) with one per tile, for the chosen K.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    let data = null, picked = Number(TW.fromUrl("moe-tile", "0", (v) => /^\d{1,5}$/.test(v)));
    const ROWS = "40,0,130,64,7,200,90,16";
    const rowsIn = el("input", { type: "text", value: TW.fromUrl("moe-rows", ROWS, (v) => /^[\d, ]{1,400}$/.test(v)),
      "aria-label": "tokens per expert", dataset: { k: "moe-rows" } });
    let debounce = null;
    rowsIn.addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(() => update(), 250); TW.remember(); });
    TW.track("moe-rows", () => rowsIn.value, (v) => { rowsIn.value = v; }, ROWS, () => update());
    TW.track("moe-tile", () => picked, (v) => { picked = Number(v); }, 0, () => data && draw());
    const bmSel = TW.select({ key: "moe-block-m", label: "BLOCK_M", value: 64, options: [[16, "16"], [32, "32"], [64, "64"], [128, "128"]], onChange: () => update() });
    const nSel = TW.select({ key: "moe-n", label: "N (BLOCK_N = 128)", value: 512, options: [[256, "256"], [512, "512"], [1024, "1024"], [2048, "2048"]], onChange: () => update() });
    const kSel = TW.select({ key: "moe-k", label: "K (the main loop's length)", value: 2048, options: [[256, "256"], [1024, "1024"], [2048, "2048"], [7168, "7168"]], onChange: () => update() });
    const progs = TW.slider({ key: "moe-programs", label: "persistent programs", min: 1, max: 132, value: 132, onInput: () => update() });
    body.append(el("div", { class: "controls" },
      el("label", { class: "ctl" }, el("span", {}, "tokens (rows) per expert"), rowsIn), bmSel.node, nSel.node, kSel.node, progs.node));
    const st = {
      tiles: TW.stat("moe-tiles", "tiles in all"),
      busy: TW.stat("moe-busy", "programs with work"),
      rounds: TW.stat("moe-rounds", "tiles per busy program, at most"),
      idle: TW.stat("moe-idle", "programs idle", "hot"),
      fill: TW.stat("moe-fill", "rows of the M tiles with data"),
      ohp: TW.stat("moe-overhead-persistent", "prologue + epilogue, persistent"),
      ohl: TW.stat("moe-overhead-launch", "prologue + epilogue, a block per tile"),
    };
    const fig = el("div", { class: "figure" });
    const search = el("div", { dataset: { k: "moe-picked" } });
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)), fig, search);

    function draw() {
      const d = data, sc = d.schedule;
      const E = sc.rows_per_expert.length;
      const W = 940;
      // Keyboard: focus the drawing and move the picked tile with the arrow keys (Home / End for the ends).
      const g = s("svg", { viewBox: `0 0 ${W} 10`, width: W, role: "img", tabindex: 0, dataset: { k: "moe-svg" },
        "aria-label": `tile schedule; tile ${picked} picked, arrow keys move`,
        onkeydown: (ev) => {
          const last = d.schedule.total_tiles - 1;
          const to = { ArrowRight: picked + 1, ArrowDown: picked + 1, ArrowLeft: picked - 1, ArrowUp: picked - 1, Home: 0, End: last }[ev.key];
          if (to === undefined || last < 0) return;
          ev.preventDefault();
          picked = Math.max(0, Math.min(last, to));
          draw();
          TW.remember();
          fig.querySelector("svg").focus();
        } });
      // Experts: rows, M tiles, tiles.
      const maxRows = Math.max(1, ...sc.rows_per_expert);
      const bwid = Math.min(100, (W - 20) / E - 6);
      sc.rows_per_expert.forEach((r, e) => {
        const x = 10 + e * (bwid + 6), h = 60 * (r / maxRows);
        g.append(
          s("rect", { x, y: 18 + 60 - h, width: bwid, height: Math.max(h, 1), rx: 3, fill: TW.color(e), opacity: 0.85 }),
          s("text", { x: x + bwid / 2, y: 12, "text-anchor": "middle", "font-size": 11, "font-weight": 700 }, `expert ${e}`),
          s("text", { x: x + bwid / 2, y: 92, "text-anchor": "middle", class: "small" }, `${r} rows`),
          s("text", { x: x + bwid / 2, y: 104, "text-anchor": "middle", class: "small" }, `${sc.m_tiles[e]}×${sc.n_tiles} = ${sc.tiles_per_expert[e]} tiles`),
        );
      });
      // The global tile strip, wrapped, with the prefix sum at expert boundaries.
      const per = Math.min(32, Math.max(16, sc.total_tiles));
      const cw = (W - 20) / per, chh = 26, top = 136;
      const lines = Math.max(1, Math.ceil(sc.total_tiles / per));
      g.append(s("text", { x: 10, y: top - 10, "font-size": 12, "font-weight": 700 },
        `Global tile index → expert (colour) and program (number). Prefix sum: [${sc.prefix.join(", ")}]`));
      d.tiles.forEach((t) => {
        const x = 10 + (t.tile % per) * cw, y = top + Math.floor(t.tile / per) * (chh + 16);
        g.append(s("rect", { class: "cell-anim", x, y, width: cw - 1.5, height: chh, rx: 3, fill: TW.color(t.expert),
          opacity: t.tile === picked ? 1 : 0.72, stroke: t.tile === picked ? "#1b2230" : "none", "stroke-width": 2,
          dataset: { tile: t.tile }, onclick: () => { picked = t.tile; draw(); TW.remember(); } },
        s("title", {}, `tile ${t.tile}: expert ${t.expert}, local ${t.local} = (m ${t.m_tile}, n ${t.n_tile}), program ${t.program}`)));
        if (cw >= 13) g.append(s("text", { x: x + cw / 2 - 0.75, y: y + 17, "text-anchor": "middle", class: "mono", "font-size": 10, "pointer-events": "none", style: { fill: "#fff" } }, `P${t.program}`));
      });
      new Set(sc.prefix.slice(1, -1)).forEach((p) => {
        if (p === 0 || p === sc.total_tiles) return;
        const x = 10 + (p % per) * cw - 0.75, y = top + Math.floor(p / per) * (chh + 16);
        g.append(s("line", { x1: x, x2: x, y1: y - 4, y2: y + chh + 4, stroke: "#1b2230", "stroke-width": 1.5 }),
          s("text", { x, y: y + chh + 13, "text-anchor": "middle", class: "small" }, String(p)));
      });
      const H = top + lines * (chh + 16) + 10;
      g.setAttribute("viewBox", `0 0 ${W} ${H}`);
      g.setAttribute("height", H);
      TW.mount(fig, g);
      const t = d.tiles.find((x) => x.tile === picked);
      if (t) {
        TW.mount(search, TW.prose([
          `Tile ${t.tile}: the last prefix ≤ ${t.tile} is ${sc.prefix[t.expert]} (binary search over \`prefix\`), so it belongs to expert ${t.expert} as its local tile ${t.local}.`,
          `Local tile ${t.local} is (m tile ${t.m_tile}, n tile ${t.n_tile}): m varies fastest, so consecutive tiles share one [K, BLOCK_N] slice of the expert's weight while it is in L2.`,
          `Program ${t.program} of ${d.programs} takes it in its round ${t.round + 1}; its tiles, striding by the number of programs: ` +
            d.tiles.filter((x) => x.program === t.program).map((x) => x.tile).join(", ") + ".",
        ]));
      } else TW.mount(search);
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const info = ctx.gpuInfo();
      if (info) progs.setMax(Math.max(info.sms, 132));
      const d = await TW.api("moe", { gpu: ctx.gpu, rows: rowsIn.value.replace(/\s+/g, ""), block_m: bmSel.value, n: nSel.value, block_n: 128, programs: progs.value, k: kSel.value });
      return () => {
        data = d;
        if (picked >= d.schedule.total_tiles) picked = 0;
        st.tiles.set(fmt.int(d.schedule.total_tiles));
        st.busy.set(`${fmt.int(d.busy_programs)} / ${fmt.int(d.programs)}`);
        st.rounds.set(fmt.int(d.rounds));
        st.idle.set(fmt.int(d.idle_programs), d.idle_programs > 0 ? "hot" : "ok");
        const c = d.cost;
        st.fill.set(c ? fmt.pct(c.m_fill) : "—", c && c.m_fill < 0.75 ? "hot" : "");
        st.ohp.set(c ? fmt.pct(c.overhead_share_persistent) : "—");
        st.ohl.set(c ? fmt.pct(c.overhead_share_per_launch) : "—", c && c.overhead_share_per_launch > 0.2 ? "hot" : "");
        draw();
      };
    });
    ctx.onGpu(update);
    update();
  },
});
