/* GEMM tiling: output-stationary tiles, 8x8 = 8x8 x 8x8 with 2x2x2 blocks, step by step. */
"use strict";

TW.register({
  id: "tiling",
  title: "Output-stationary tiling, step by step",
  short: "GEMM tiling",
  source: "steps of the kernel's loops · model.traffic.gemm_tiled_hbm_bytes · /api/tiling",
  lede: [
    "The big matrices fit in no on-chip memory, so C is cut into tiles and each program (thread block) owns one. " +
      "It walks along K, loading one tile of A and one of B per step and accumulating into `acc`, which stays in " +
      "registers for the whole K loop. Only after the loop does it store its C tile: one write per element, not one per K step.",
    "A small case: C[8×8] = A[8×8] × B[8×8] with BLOCK 2×2×2. The numbers on A and B count how often " +
      "each element has been read so far: every column of tiles re-reads A, every row of tiles re-reads B.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    let data = null, idx = 0, timer = null;
    const blockSel = TW.select({ key: "tile-blocks", label: "BLOCK_M × BLOCK_N × BLOCK_K", value: "2,2,2",
      options: [["2,2,2", "2 × 2 × 2"], ["4,4,2", "4 × 4 × 2"], ["4,4,4", "4 × 4 × 4"], ["2,4,4", "2 × 4 × 4"], ["8,8,8", "8 × 8 × 8"], ["1,1,8", "1 × 1 × 8 (naive)"]],
      onChange: () => update() });
    // The step is part of the view; its range is known only once the steps arrive, so the URL's value is read here.
    let firstStep = Number(TW.fromUrl("tile-step", "0", (v) => /^\d{1,5}$/.test(v)));
    const stepSl = TW.slider({ key: "tile-step", label: "step", min: 0, max: 1, value: 0, format: (v) => `${v + 1}`, onInput: (v) => { stop(); show(v); } });
    const play = TW.button("▶ play", () => toggle(), "primary");
    const prev = TW.button("◀", () => { stop(); show(Math.max(0, idx - 1)); });
    const next = TW.button("▶", () => { stop(); show(Math.min(data.steps.length - 1, idx + 1)); });
    body.append(el("div", { class: "controls" }, blockSel.node, stepSl.node, el("div", {}, prev, " ", play, " ", next)));

    const st = {
      prog: TW.stat("tile-program", "program (pid_m, pid_n)"),
      a: TW.stat("tile-loaded-a", "A elements loaded"),
      b: TW.stat("tile-loaded-b", "B elements loaded"),
      c: TW.stat("tile-written-c", "C elements written", "ok"),
      total: TW.stat("tile-total", "tiled traffic (elements)"),
      naive: TW.stat("tile-naive", "naive traffic (elements)", "hot"),
    };
    const fig = el("div", { class: "figure" });
    const code = el("pre", { class: "code", "aria-label": "kernel" });
    const note = el("div", { class: "caption" });
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)),
      el("div", { class: "cols tiling-cols" }, el("div", {}, fig, note), code));

    const CODE = [
      "pid_m = tl.program_id(0)",
      "pid_n = tl.program_id(1)",
      "acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)",
      "for k in range(0, K, BLOCK_K):",
      "    a = tl.load(A_ptr + offs_m[:, None] * stride_am",
      "                + (k + offs_k)[None, :] * stride_ak)",
      "    b = tl.load(B_ptr + (k + offs_k)[:, None] * stride_bk",
      "                + offs_n[None, :] * stride_bn)",
      "    acc += tl.dot(a, b)   # Tensor Core MMA",
      "# after the K loop only:",
      "tl.store(c_ptrs, acc)",
    ];
    const HL = { mma: [3, 4, 5, 6, 7, 8], store: [10] };

    function draw() {
      const d = data, p = d.problem, step = d.steps[idx];
      const cs = Math.max(12, Math.min(22, 180 / Math.max(p.m, p.n, p.k)));
      const ax = 20, ay = 40 + p.k * cs + 24; // A at the bottom left
      const bx = ax + p.k * cs + 24, by = 40; // B above C
      const cx = bx, cy = ay;
      const accX = cx + p.n * cs + 36;
      const W = accX + Math.max(p.block_n * cs, 100) + 10, H = ay + p.m * cs + 40;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "tiling animation" });
      // Reads so far per element, and C elements written so far, from the steps up to this one.
      const readsA = Array.from({ length: p.m }, () => new Array(p.k).fill(0));
      const readsB = Array.from({ length: p.k }, () => new Array(p.n).fill(0));
      const written = Array.from({ length: p.m }, () => new Array(p.n).fill(false));
      for (let i = 0; i <= idx; i++) {
        const t = d.steps[i];
        if (t.op === "mma") {
          for (let r = t.rows[0]; r < t.rows[1]; r++) for (let k = t.k[0]; k < t.k[1]; k++) readsA[r][k]++;
          for (let k = t.k[0]; k < t.k[1]; k++) for (let c = t.cols[0]; c < t.cols[1]; c++) readsB[k][c]++;
        } else {
          for (let r = t.rows[0]; r < t.rows[1]; r++) for (let c = t.cols[0]; c < t.cols[1]; c++) written[r][c] = true;
        }
      }
      const inA = (r, k) => step.op === "mma" && r >= step.rows[0] && r < step.rows[1] && k >= step.k[0] && k < step.k[1];
      const inB = (k, c) => step.op === "mma" && c >= step.cols[0] && c < step.cols[1] && k >= step.k[0] && k < step.k[1];
      const matrix = (x0, y0, rows, cols, fill, label, text) => {
        const grp = s("g", {});
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
          grp.append(s("rect", { class: "cell-anim", x: x0 + c * cs, y: y0 + r * cs, width: cs - 1.5, height: cs - 1.5, rx: 2, fill: fill(r, c) }));
          const t = text && text(r, c);
          if (t) grp.append(s("text", { x: x0 + c * cs + cs / 2 - 0.75, y: y0 + r * cs + cs / 2 + 3.5, "text-anchor": "middle", class: "mono", "font-size": 9.5, fill: "#334" }, t));
        }
        grp.append(s("text", { x: x0, y: y0 - 7, "font-weight": 700, "font-size": 13 }, label));
        return grp;
      };
      g.append(
        matrix(ax, ay, p.m, p.k, (r, k) => (inA(r, k) ? "#2563eb" : readsA[r][k] ? "#c9dafc" : "#eef1f6"), `A [${p.m} × ${p.k}]`,
          (r, k) => (readsA[r][k] && !inA(r, k) ? String(readsA[r][k]) : "")),
        matrix(bx, by, p.k, p.n, (k, c) => (inB(k, c) ? "#f59e0b" : readsB[k][c] ? "#fde7bf" : "#eef1f6"), `B [${p.k} × ${p.n}]`,
          (k, c) => (readsB[k][c] && !inB(k, c) ? String(readsB[k][c]) : "")),
        matrix(cx, cy, p.m, p.n, (r, c) => (written[r][c] ? "#10b981" : "#eef1f6"), `C [${p.m} × ${p.n}] in global memory`),
      );
      // The current program's tile of C.
      g.append(s("rect", {
        x: cx + step.cols[0] * cs - 2, y: cy + step.rows[0] * cs - 2, width: (step.cols[1] - step.cols[0]) * cs + 2.5,
        height: (step.rows[1] - step.rows[0]) * cs + 2.5, fill: "none", stroke: "#e8590c", "stroke-width": 2.5, rx: 3,
      }));
      // The accumulator in registers: the tile, filled to the share of K it holds.
      const tr = step.rows[1] - step.rows[0], tc = step.cols[1] - step.cols[0];
      const share = step.acc_k / p.k;
      g.append(s("text", { x: accX, y: cy - 7, "font-weight": 700, "font-size": 13 }, "acc (registers)"));
      for (let r = 0; r < tr; r++) for (let c = 0; c < tc; c++) {
        g.append(s("rect", { x: accX + c * cs, y: cy + r * cs, width: cs - 1.5, height: cs - 1.5, rx: 2, fill: "#eef1f6" }));
        g.append(s("rect", { class: "cell-anim", x: accX + c * cs, y: cy + r * cs + (cs - 1.5) * (1 - share), width: cs - 1.5,
          height: (cs - 1.5) * share, rx: 2, fill: step.op === "store" ? "#10b981" : "#8b5cf6" }));
      }
      g.append(s("text", { x: accX, y: cy + tr * cs + 16, class: "small" },
        step.op === "store" ? "K loop done: store once" : `holds k < ${step.acc_k} of ${p.k}`));
      // The legend, in the empty corner above A.
      [["#2563eb", "A tile loaded this step"], ["#f59e0b", "B tile loaded this step"], ["#c9dafc", "n = times read so far"],
        ["#10b981", "C written (once)"], ["#8b5cf6", "accumulator in registers"]].forEach(([c, t], i) => {
        g.append(s("rect", { x: ax, y: by + i * 18, width: 11, height: 11, rx: 2, fill: c }),
          s("text", { x: ax + 17, y: by + i * 18 + 10, "font-size": 11 }, t));
      });
      TW.mount(fig, g);
      note.textContent = step.op === "mma"
        ? `Program (${step.pid.join(", ")}), K step ${step.k_step + 1} of ${d.k_steps}: load A[${step.rows[0]}:${step.rows[1]}, ${step.k[0]}:${step.k[1]}] and B[${step.k[0]}:${step.k[1]}, ${step.cols[0]}:${step.cols[1]}], accumulate in registers.`
        : `Program (${step.pid.join(", ")}) has walked all of K: it writes its C tile, once.`;
      TW.mount(code, CODE.map((line, i) => el("span", { class: (HL[step.op] || []).includes(i) ? "hl" : "" }, line)));
      st.prog.set(`(${step.pid.join(", ")})`);
      st.a.set(fmt.int(step.loaded_a));
      st.b.set(fmt.int(step.loaded_b));
      st.c.set(fmt.int(step.written_c));
    }

    function show(i) { idx = i; stepSl.set(i); draw(); }
    function stop() { if (timer) { clearInterval(timer); TW.remember({ replace: true }); } timer = null; play.textContent = "▶ play"; }
    function toggle() {
      if (timer) return stop();
      play.textContent = "❚❚ pause";
      if (idx >= data.steps.length - 1) show(0);
      timer = setInterval(() => { if (idx + 1 >= data.steps.length) return stop(); show(idx + 1); }, 420);
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const [bm, bn, bk] = blockSel.value.split(",");
      const d = await TW.api("tiling", { m: 8, n: 8, k: 8, block_m: bm, block_n: bn, block_k: bk });
      return () => {
        stop();
        data = d;
        stepSl.setMax(d.steps.length - 1);
        st.total.set(fmt.int(d.totals.tiled_elements));
        st.naive.set(fmt.int(d.totals.naive_elements));
        show(Math.min(firstStep, d.steps.length - 1));
        firstStep = 0;
        TW.remember({ replace: true });
      };
    });
    update();
  },
});
