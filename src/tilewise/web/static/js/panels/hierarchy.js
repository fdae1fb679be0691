/* Hierarchy: grid -> blocks -> SMs -> warps, the grid laid over the SMs in waves (model.waves). */
"use strict";

TW.register({
  id: "hierarchy",
  title: "Grid → blocks → SMs → warps",
  short: "Hierarchy & waves",
  source: "tilewise.explain.gemm · model.waves.grid_waves / persistent_tiles · /api/hierarchy",
  lede: [
    "A grid is every block one launch starts. Each block owns one output tile of C, stays on one SM from start to " +
      "finish, and the scheduler hands the next block to whichever SM has room. Blocks never talk to each other.",
    "The decode GEMM C[64, 24576] = A[64, 8192] × B[8192, 24576] with 64 × 128 tiles is 192 blocks on 132 SMs: " +
      "one full wave, then a second wave of 60 blocks while 72 SMs sit idle. Press play.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    let data = null, round = 0, timer = null;
    const mSel = TW.select({ key: "hier-m", label: "M (rows of A and C)", value: 64,
      options: [1, 16, 64, 128, 256, 512, 1024].map((v) => [v, String(v)]), onChange: () => update() });
    const nSel = TW.select({ key: "hier-n", label: "N (columns of C)", value: 24576,
      options: [4096, 8192, 14336, 24576, 32768].map((v) => [v, String(v)]), onChange: () => update() });
    const tileSel = TW.select({ key: "hier-tile", label: "output tile per block", value: "64x128",
      options: ["64x64", "64x128", "128x128", "128x256", "256x128"].map((v) => [v, v.replace("x", " × ")]), onChange: () => update() });
    const thrSel = TW.select({ key: "hier-threads", label: "threads per block", value: 256,
      options: [128, 256, 384, 512].map((v) => [v, String(v)]), onChange: () => update() });
    const play = TW.button("▶ play", () => toggle(), "primary");
    const stepBtn = TW.button("next wave", () => { stop(); show((round + 1) % Math.max(1, data.waves.rounds)); });
    body.append(el("div", { class: "controls" }, mSel.node, nSel.node, tileSel.node, thrSel.node, play, stepBtn));

    const st = {
      blocks: TW.stat("hier-blocks", "blocks in the grid"),
      waves: TW.stat("hier-waves", "waves over the SMs"),
      tail: TW.stat("hier-tail", "blocks in the last wave"),
      eff: TW.stat("hier-eff", "SM-rounds doing work", "hot"),
      sk: TW.stat("hier-sk", "SM time doing work, stream-K"),
      warps: TW.stat("hier-warps", "warps per block"),
      ksteps: TW.stat("hier-ksteps", "K steps per block"),
    };
    const gridFig = el("div", { class: "figure" });
    const smFig = el("div", { class: "figure" });
    const blockFig = el("div", { class: "figure" });
    const waveLabel = el("div", { class: "caption", dataset: { k: "hier-wave-label" } });
    const smLegend = el("div", { class: "caption" }, "Each box is an SM; #n is the block it runs in this wave. Blocks are handed out in order to whichever SM has room.");
    const skLabel = el("div", { class: "caption", dataset: { k: "hier-sk-label" } });
    const skFig = el("div", { class: "figure", dataset: { k: "hier-sk-fig" } });
    const proseBox = el("div");
    const mmaBox = el("div");
    const memBox = el("div");
    const meas = el("div");
    body.append(
      el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      meas,
      el("h3", { class: "muted" }, "① The grid: one block per output tile"), gridFig,
      el("h3", { class: "muted" }, "② Blocks on SMs, wave by wave"), waveLabel, smFig, smLegend, skLabel, skFig,
      el("h3", { class: "muted" }, "③ Inside one block: warps of 32 threads"), blockFig,
      el("h3", { class: "muted" }, "④ Warps → registers → Tensor Cores, and the memory they draw from"),
      el("div", { class: "cols even" }, mmaBox, memBox),
      proseBox,
    );

    function drawGrid() {
      const [gm, gn] = data.grid;
      const W = 940, labelH = 18;
      const cw = Math.max(2, Math.min(40, (W - 10) / gn));
      const ch = Math.max(6, Math.min(26, 160 / gm));
      const H = gm * ch + labelH + 6;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "grid of blocks" });
      for (let b = 0; b < data.blocks; b++) {
        const i = Math.floor(b / gn), j = b % gn; // blocks are numbered row-major over the grid
        const w = data.wave_of_block[b];
        g.append(s("rect", {
          class: "cell-anim", x: 2 + j * cw, y: i * ch, width: Math.max(1, cw - (cw > 4 ? 1 : 0)), height: ch - 1,
          fill: TW.color(w), opacity: w <= round ? 0.9 : 0.25,
        }, s("title", {}, `block ${b}: tile (${i}, ${j}) on SM ${data.sm_of_block[b]}, wave ${w + 1}`)));
      }
      g.append(s("text", { x: 2, y: gm * ch + 14, class: "small" },
        `C [${data.problem.m} × ${data.problem.n}] cut into ${gm} × ${gn} tiles of ${data.problem.tile[0]} × ${data.problem.tile[1]}; colour = the wave the block runs in`));
      TW.mount(gridFig, g);
    }

    function drawSms() {
      const n = data.schedule.length;
      const cols = n > 120 ? 12 : Math.min(12, n);
      const bw = 74, bh = 34, gap = 4;
      const rows = Math.ceil(n / cols);
      const W = cols * (bw + gap), H = rows * (bh + gap);
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "SMs" });
      data.schedule.forEach((blocks, sm) => {
        const x = (sm % cols) * (bw + gap), y = Math.floor(sm / cols) * (bh + gap);
        const b = blocks[round];
        const busy = b !== undefined;
        g.append(
          s("rect", { class: "cell-anim", x, y, width: bw, height: bh, rx: 5, fill: busy ? TW.color(round) : "#e6e9ef", opacity: busy ? 0.9 : 1 }),
          s("text", { x: x + 5, y: y + 11, "font-size": 9, style: { fill: busy ? "#ffffffcc" : "#8a93a3" } }, `SM ${sm}`),
          s("text", { x: x + bw - 6, y: y + 28, "text-anchor": "end", class: "mono", "font-size": 13, "font-weight": 700,
            style: { fill: busy ? "#fff" : "#8a93a3" } }, busy ? `#${b}` : "idle"),
        );
      });
      TW.mount(smFig, g);
      const busyNow = data.busy_sms_per_wave[round];
      waveLabel.textContent = `Wave ${round + 1} of ${data.waves.rounds}: ${busyNow} of ${n} SMs busy` +
        (busyNow < n ? `, ${n - busyNow} idle` : "");
    }

    function drawSmLoad() {
      // every SM's K steps: the waves (its blocks x the K loop) against stream-K's deal (model.waves.stream_k_summary)
      const sk = data.stream_k;
      if (!sk) { TW.mount(skFig, el("div")); return; }
      const dp = data.schedule.map((bs) => bs.length * data.k_steps);
      const n = dp.length, top = Math.max(...dp, ...sk.cta_steps, 1);
      const dealt = [...sk.cta_steps, ...Array(Math.max(0, n - sk.cta_steps.length)).fill(0)]; // SMs past the grid idle
      const W = 940, left = 110, rowH = 46, H = 2 * rowH + 20, bw = (W - left - 4) / n;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "SM load" });
      [["data-parallel", dp], ["stream-K", dealt]].forEach(([name, load], row) => {
        const y0 = row * rowH;
        g.append(s("text", { x: left - 8, y: y0 + rowH / 2 + 4, "text-anchor": "end", class: "small" }, name));
        load.forEach((v, i) => {
          const h = (rowH - 8) * v / top;
          g.append(s("rect", { x: left + i * bw, y: y0 + rowH - 4 - h, width: Math.max(1, bw - 1), height: h,
            fill: TW.color(row), opacity: 0.85 }, s("title", {}, `${name}: SM ${i}, ${v} K steps`)));
        });
      });
      g.append(s("text", { x: left, y: H - 4, class: "small" },
        `K steps per SM (the bar's height; ${fmt.int(top)} the highest): the busiest SM sets the kernel's time`));
      TW.mount(skFig, g);
    }

    function drawBlock() {
      const warps = data.warps_per_block, ws = data.warp_size;
      const cell = 14, left = 200, W = Math.max(left + ws * cell + 10, 720), H = warps * (cell + 4) + 26;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "warps of one block" });
      for (let w = 0; w < warps; w++) {
        const y = w * (cell + 4);
        g.append(s("text", { x: left - 8, y: y + 10, "text-anchor": "end", class: "mono", "font-size": 11 },
          `warp ${w}: threads ${w * ws}–${(w + 1) * ws - 1}`));
        for (let t = 0; t < ws; t++) {
          const tid = w * ws + t;
          g.append(s("rect", { x: left + t * cell, y, width: cell - 2, height: cell, rx: 2,
            fill: tid < data.threads ? TW.color(w) : "#e6e9ef", opacity: 0.75 }));
        }
      }
      g.append(s("text", { x: left, y: H - 6, class: "small" },
        `${data.threads} threads = ${warps} warps; a warp is the 32 consecutive linear thread indices the SM issues together`));
      TW.mount(blockFig, g);
    }

    function show(r) {
      round = r;
      drawGrid();
      drawSms();
    }

    function stop() { if (timer) clearInterval(timer); timer = null; play.textContent = "▶ play"; }
    function toggle() {
      if (timer) return stop();
      play.textContent = "❚❚ pause";
      show(0);
      timer = setInterval(() => {
        if (round + 1 >= data.waves.rounds) { stop(); return; }
        show(round + 1);
      }, 1200);
    }

    function drawMma() {
      const m = data.mma;
      TW.mount(mmaBox,
        el("div", { class: "stats" },
          [[m.mma_shape.join("×"), "one MMA (m × n × k)"], [fmt.int(m.flops_per_mma), "FLOPs per MMA"],
            [fmt.int(m.mmas_per_k_step), "MMAs per block per K step"], [fmt.fixed(m.mmas_per_warp_per_k_step, 0), "per warp per K step"]]
            .map(([v, l]) => el("div", { class: "stat" }, el("div", { class: "v" }, v), el("div", { class: "l" }, l)))),
        TW.prose(data.explain.mma || []));
      const rows = data.memory.map((lv) => el("tr", {},
        el("td", {}, lv.level),
        el("td", {}, `${lv.capacity_bytes >= 1e10 ? `${+(lv.capacity_bytes / 1e9).toPrecision(3)} GB` : fmt.bytes(lv.capacity_bytes)}${lv.per_sm ? " per SM" : ""}`),
        el("td", {}, lv.bytes_per_s === null ? "—" : `${fmt.si(lv.bytes_per_s, "B/s", 3)}`),
        el("td", {}, lv.balance === null ? "—" : `${fmt.fixed(lv.balance, 0)} FLOP/B`)));
      TW.mount(memBox,
        el("table", { class: "kv mem" },
          el("tr", {}, ["level", "capacity", "bandwidth", "balance (bf16)"].map((h) => el("td", { class: "muted" }, h))),
          rows,
          el("tr", {}, el("td", {}, "Tensor Cores"), el("td", {}, "—"), el("td", {}, fmt.si(data.peak_flops_bf16, "FLOP/s", 4)), el("td", {}, ""))),
        el("div", { class: "caption" }, "Balance: FLOPs the Tensor Cores can do per byte the level delivers. Below it, that level is the bottleneck."),
        drawProbe());
    }

    // Measured: the H200's read bandwidth over working-set sizes (ld.global.cg skips L1, so what fits in L2 is
    // read from L2); the registry's L2 figure is the median of these rows from 8 to 48 MiB.
    function drawProbe() {
      const p = data.l2_probe;
      if (!p) return null;
      const cg = p.rows.filter((r) => r.cg);
      const series = [[4, 8, "#0f9d76"], [8, 4, "#2563eb"]].map(([prog, w, c]) => ({
        points: cg.filter((r) => r.programs_per_sm === prog && r.warps === w), color: c, label: `${prog} programs/SM × ${w} warps`,
      }));
      const l2 = data.memory.find((lv) => lv.level === "L2").bytes_per_s / 1e12;
      const hbm = data.memory.find((lv) => lv.level === "HBM").bytes_per_s / 1e12;
      const biggest = Math.max(...cg.map((r) => r.MiB));
      const far = cg.filter((r) => r.MiB === biggest).reduce((a, b) => (b.TBps > a.TBps ? b : a));
      return el("div", { class: "measured", dataset: { k: "hier-l2-probe" } },
        el("div", { class: "measured-head" }, el("strong", {}, "Measured: read bandwidth by working set"), " ",
          el("span", { class: "muted" }, [p.gpu, p.date, `torch ${p.torch}, triton ${p.triton}`].join(" · "))),
        TW.chart({ series, x: (r) => Math.log2(r.MiB), y: (r) => r.TBps, step: false, width: 420, height: 170, yMax: 12,
          xFormat: (v) => `${fmt.int(2 ** v)} MiB`, xLabel: "working set (log)", yLabel: "TB/s", yFormat: (v) => fmt.fixed(v, 1),
          hline: l2, hlineLabel: `model L2 ${fmt.fixed(l2, 1)} TB/s` }),
        el("div", { class: "caption" }, `Past the L2 the reads come from HBM: ${fmt.fixed(far.TBps, 2)} TB/s at `,
          `${fmt.int(far.MiB)} MiB (`,
          el("a", { href: `/api/row?${new URLSearchParams({ file: p.file, row: far.row })}`, target: "_blank", rel: "noopener",
            dataset: { k: "hier-l2-probe-link" } }, `${p.file} · row ${far.row}`),
          `) against the datasheet's ${fmt.fixed(hbm, 2)} TB/s.`,
          ` Reproduce: ${p.reproduce || p.command}.`));
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const [tm, tn] = tileSel.value.split("x");
      const d = await TW.api("hierarchy", { gpu: ctx.gpu, m: mSel.value, n: nSel.value, tile_m: tm, tile_n: tn, threads: thrSel.value });
      return () => {
        stop();
        data = d;
        st.blocks.set(fmt.int(d.blocks));
        st.waves.set(fmt.fixed(d.waves.waves, 2));
        st.tail.set(fmt.int(d.busy_sms_per_wave[d.busy_sms_per_wave.length - 1]));
        st.eff.set(fmt.pct(d.waves.efficiency), d.waves.efficiency < 0.9 ? "hot" : "ok");
        const sk = d.stream_k;
        st.sk.set(sk ? fmt.pct(sk.efficiency) : "—", sk && sk.efficiency < 0.9 ? "hot" : "ok");
        skLabel.textContent = sk
          ? `Stream-K instead deals the ${fmt.int(d.blocks * d.k_steps)} K steps over ${fmt.int(sk.grid)} CTAs ` +
            `(${fmt.int(sk.lanes)} ${sk.lanes === 1 ? "row" : "rows"} of tiles × ${fmt.int(sk.per_lane)}): the busiest runs ${fmt.int(sk.busiest_steps)} steps, ` +
            `${fmt.int(sk.partials)} tile parts end as fp32 partials and an owner adds at most ${fmt.int(sk.max_partners)} of them.`
          : `Stream-K takes one row of tiles per lane: ${fmt.int(d.grid[0])} rows exceed the ${fmt.int(d.gpu.sms)} SMs.`;
        st.warps.set(fmt.int(d.warps_per_block));
        st.ksteps.set(fmt.int(d.k_steps));
        show(0);
        drawSmLoad();
        drawBlock();
        drawMma();
        TW.mount(meas, TW.gemmMeasured("hier-measured", d.measured, d.gpu, `${d.problem.m} × ${d.problem.n} × ${d.problem.k}`));
        TW.mount(proseBox, TW.prose([...d.explain.tiling, ...d.explain.waves.slice(0, 1), ...d.explain.block, ...(d.explain.roofline || [])]));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
