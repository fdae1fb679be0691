/* Occupancy: "Move the sliders" — the four limits, the tightest wins (model.occupancy). */
"use strict";

TW.register({
  id: "occupancy",
  title: "Occupancy: four limits, the tightest wins",
  short: "Occupancy",
  source: "tilewise.model.occupancy.occupancy · /api/occupancy",
  lede: [
    "You cannot set occupancy directly. Four limits decide how many blocks an SM holds, and the tightest one wins: " +
      "shared memory, registers (65,536 per SM), warps (64) and blocks (32). On Hopper a fifth one counts too: named barriers.",
    "Move the sliders. The answer is the CUDA runtime's own (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`), " +
      "reproduced rule for rule: registers are allocated per warp in 256-register units, shared memory per block " +
      "includes the 1 KB the driver reserves.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    const threads = TW.slider({ key: "occ-threads", label: "threads per block", min: 32, max: 1024, step: 32, value: 256, onInput: () => update() });
    const regs = TW.slider({ key: "occ-registers", label: "registers per thread", min: 0, max: 255, step: 1, value: 64, onInput: () => update() });
    const smem = TW.slider({
      key: "occ-smem", label: "shared memory per block", min: 0, max: 227, step: 1, value: 48,
      format: (v) => `${v} KB`, onInput: () => update(),
    });
    const controls = el("div", { class: "controls" }, threads.node, regs.node, smem.node);

    const sBlocks = TW.stat("occ-blocks", "blocks per SM", "ok");
    const sWarps = TW.stat("occ-warps", "resident warps per SM");
    const sOcc = TW.stat("occ-occupancy", "occupancy");
    const sLim = TW.stat("occ-limiter", "binding limit", "hot");
    const bars = el("div", { class: "figure" });
    const table = el("div");
    const curves = el("div", { class: "cols even" });
    const notes = el("div");
    const meas = el("div");
    body.append(
      controls,
      el("div", { class: "stats" }, sBlocks.node, sWarps.node, sOcc.node, sLim.node),
      meas,
      el("div", { class: "cols" }, el("div", {}, bars, el("div", { class: "caption" },
        "Blocks each limit would allow on one SM; the shortest bar binds. Warp slots in use are drawn underneath.")), table),
      notes,
      el("h3", { class: "muted" }, "What if one of them changes (the others fixed)"),
      curves,
    );

    const LIMIT_LABEL = { warps: "warps", registers: "registers", shared_memory: "shared memory", blocks: "blocks", barriers: "barriers" };

    function drawBars(d) {
      const o = d.result, hw = d.hardware;
      const names = Object.keys(o.limits);
      const W = 600, rowH = 30, left = 160, top = 8;
      const scaleMax = hw.max_blocks_per_sm;
      const H = top + names.length * rowH + 64;
      const sx = (v) => left + (Math.min(v, scaleMax) / scaleMax) * (W - left - 60);
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "occupancy limits" });
      names.forEach((name, i) => {
        const v = o.limits[name];
        const y = top + i * rowH;
        const bind = (o.limiters || [o.limiter]).includes(name);
        const shown = v === null ? "no limit" : String(v);
        g.append(
          s("text", { x: left - 10, y: y + 18, "text-anchor": "end", "font-weight": bind ? 700 : 400 }, LIMIT_LABEL[name] || name),
          s("rect", { x: left, y: y + 5, width: W - left - 60, height: 18, rx: 4, fill: "#eef1f6" }),
          s("rect", {
            class: "cell-anim", x: left, y: y + 5, width: Math.max(2, sx(v === null ? scaleMax : v) - left), height: 18, rx: 4,
            fill: bind ? "#e8590c" : v === null ? "#d4d9e1" : "#93b4f5",
          }),
          s("text", { x: sx(v === null ? scaleMax : v) + 6, y: y + 18, class: "mono", "font-weight": bind ? 700 : 400 }, shown),
        );
      });
      // Warp slots of the SM: resident warps filled, block by block.
      const y0 = top + names.length * rowH + 14;
      const slots = hw.max_warps_per_sm;
      const cw = (W - left - 60) / slots;
      g.append(s("text", { x: left - 10, y: y0 + 13, "text-anchor": "end" }, "warp slots"));
      for (let w = 0; w < slots; w++) {
        const blk = Math.floor(w / o.warps_per_block);
        const used = w < o.warps_per_sm;
        g.append(s("rect", {
          x: left + w * cw + 0.5, y: y0, width: Math.max(1, cw - 1), height: 18, rx: 2,
          fill: used ? TW.color(blk) : "#e6e9ef", opacity: used ? 0.85 : 1,
        }));
      }
      g.append(s("text", { x: left, y: y0 + 36, class: "small" },
        `${o.warps_per_sm} of ${slots} warp slots resident: ${o.blocks_per_sm} block(s) × ${o.warps_per_block} warps (one colour per block)`));
      TW.mount(bars, g);
    }

    function drawTable(d) {
      const o = d.result, hw = d.hardware;
      const rows = [
        ["warps per block", fmt.int(o.warps_per_block)],
        ["registers per block (allocated)", fmt.int(o.registers_per_block)],
        ["registers per SM", fmt.int(hw.regs_per_sm)],
        ["shared memory per block (allocated)", fmt.bytes(o.smem_per_block)],
        ["SM carveout for this kernel", fmt.bytes(o.smem_per_sm_config)],
        ["max warps / blocks per SM", `${hw.max_warps_per_sm} / ${hw.max_blocks_per_sm}`],
      ];
      TW.mount(table, el("table", { class: "kv" }, rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v)))));
    }

    function drawCurves(d) {
      const o = d.result;
      const wi = d.what_if;
      const mk = (key, label, x, cur) => el("div", {},
        el("div", { class: "caption" }, `resident warps per SM vs ${label}`),
        TW.chart({ points: wi[key], x, y: (p) => p.warps, yMax: d.hardware.max_warps_per_sm, xLabel: label, yLabel: "warps", marker: cur, width: 300, height: 140 }));
      TW.mount(curves,
        mk("threads", "threads per block", (p) => p.threads, o.threads),
        mk("registers", "registers per thread", (p) => p.registers, o.registers),
        mk("smem", "shared memory (bytes)", (p) => p.smem, o.static_smem + o.dynamic_smem));
      curves.className = "cols";
      curves.style.gridTemplateColumns = "repeat(auto-fit, minmax(260px, 1fr))";
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const info = ctx.gpuInfo();
      if (info) {
        const maxKb = Math.floor(info.smem_per_block_optin / 1024);
        smem.setMax(maxKb);
        if (smem.value > maxKb) smem.set(maxKb);
      }
      const d = await TW.api("occupancy", {
        gpu: ctx.gpu, threads: threads.value, registers: regs.value, smem: smem.value * 1024,
      });
      return () => {
        const o = d.result;
        smem.setMax(Math.floor(d.hardware.smem_per_block_optin / 1024));
        sBlocks.set(fmt.int(o.blocks_per_sm), o.blocks_per_sm === 0 ? "hot" : "ok");
        sWarps.set(`${fmt.int(o.warps_per_sm)} / ${fmt.int(o.max_warps_per_sm)}`);
        sOcc.set(fmt.pct(o.occupancy));
        sLim.set(LIMIT_LABEL[o.limiter] || o.limiter);
        const ties = (o.limiters || []).filter((x) => x !== o.limiter);
        sLim.node.title = ties.length ? `tied with ${ties.map((x) => LIMIT_LABEL[x] || x).join(", ")}` : "";
        drawBars(d);
        drawTable(d);
        drawCurves(d);
        TW.mount(notes, o.notes.length ? TW.prose(o.notes) : null);
        const m = d.measured;
        TW.mount(meas, m
          ? TW.measuredBox({
            key: "occ-measured", title: "The CUDA runtime's answer",
            rows: [{ label: "blocks per SM", measured: String(m.blocks_per_sm), model: String(o.blocks_per_sm), k: "blocks" }],
            src: { file: m.file, row: m.line, gpu: m.gpu, date: m.date, tools: m.nvcc },
            note: `${m.what} for this configuration (static shared memory 0, one barrier)`,
          })
          : el("p", { class: "caption", dataset: { k: "occ-measured-none" } }, d.gpu.key === "h200"
            ? "The H200's runtime answers (tests/data/occupancy) do not include this exact configuration: try a register count of 32, 64 or 128 and a shared-memory size of 0, 4, 8, 16, 32, 48, 64, 80, 128, 160 or 227 KB."
            : ["Runtime answers were recorded on the H200: ", TW.button("show them", () => TW.useGpu && TW.useGpu("h200")), " (switches the GPU menu)."]));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
