/* The advisor: a problem in, ranked configs with predicted time, binding term and reason out (tilewise.advise). */
"use strict";

TW.register({
  id: "advisor",
  title: "The advisor: a problem in, ranked configs out",
  short: "Advisor",
  source: "tilewise.advise.advise (the same function as `tilewise advise`) · /api/advisor",
  lede: [
    "Describe a GEMM, an attention forward, a decode step or a grouped GEMM. The advisor ranks the configurations the " +
      "kernel can run by the model's predicted time, names the term that binds each one and says why it was chosen.",
    "Where the committed sweeps timed the same problem on the H200, the measured best configuration stands beside the advice.",
    "On a Hopper GPU a GEMM also lists the Gluon kernel's configs, ranked by the same model; matmul runs whichever kernel's " +
      "first config is predicted faster.",
  ],
  build(body, ctx) {
    const { el, fmt } = TW;
    // The sweep's other sources, timed beside the space for the same problem.
    const PEERS = { cublas: "cuBLAS (torch.matmul)", sdpa: "SDPA", hand: "the kernel's hand rule", nmh: "nvidia-matmul-heuristics' pick" };
    // Fields per kernel: [key, label, default].
    const FIELDS = {
      gemm: [["m", "M", 64], ["n", "N", 24576], ["k", "K", 8192]],
      attention: [["batch", "batch", 4], ["heads", "heads", 32], ["kv_heads", "KV heads", 32], ["seq", "sequence", 4096]],
      decode: [["batch", "batch", 8], ["heads", "heads", 32], ["kv_heads", "KV heads", 8], ["seq", "context length", 32768]],
      grouped: [["experts", "experts", 128], ["rows", "rows per expert", 32], ["n", "N", 1536], ["k", "K", 2048]],
    };
    const kernelSel = TW.select({ key: "adv-kernel", label: "problem", value: "gemm",
      options: [["gemm", "GEMM"], ["attention", "attention (forward)"], ["decode", "decode attention"], ["grouped", "grouped GEMM (MoE)"]],
      onChange: () => { layout(); update(); } });
    const dtypeSel = TW.select({ key: "adv-dtype", label: "dtype", value: "bf16", options: [["bf16", "bf16"], ["fp16", "fp16"]], onChange: () => update() });
    const hdSel = TW.select({ key: "adv-head_dim", label: "head dim", value: "128", options: [["32", "32"], ["64", "64"], ["128", "128"], ["256", "256"]], onChange: () => update() });
    const layoutSel = TW.select({ key: "adv-layout", label: "B layout", value: "nn", options: [["nn", "B [K, N]"], ["nt", "a @ w.T, w [N, K]"]], onChange: () => update() });
    const causalSel = TW.select({ key: "adv-causal", label: "mask", value: "1", options: [["1", "causal"], ["0", "none"]], onChange: () => update() });
    const inputs = {};
    const fieldBox = el("span", { class: "controls", style: { margin: 0 } });
    let deb = null;
    for (const [kern, fields] of Object.entries(FIELDS)) {
      for (const [k, label, def] of fields) {
        const key = `adv-${kern}-${k}`;
        const input = el("input", { type: "text", inputmode: "numeric", size: 7, style: { width: "110px" }, value: TW.fromUrl(key, String(def), (v) => /^\d{1,7}$/.test(v)),
          "aria-label": label, dataset: { k: key } });
        input.addEventListener("input", () => { clearTimeout(deb); deb = setTimeout(() => update(), 300); TW.remember(); });
        TW.track(key, () => input.value, (v) => { input.value = v; }, String(def), () => update());
        inputs[key] = { node: el("label", { class: "ctl", style: { minWidth: "90px" } }, el("span", {}, label), input), input, kern, k };
      }
    }
    function layout() {
      const kern = kernelSel.value;
      TW.mount(fieldBox, Object.values(inputs).filter((x) => x.kern === kern).map((x) => x.node),
        dtypeSel.node, kern === "gemm" ? layoutSel.node : null, kern === "attention" || kern === "decode" ? hdSel.node : null,
        kern === "attention" ? causalSel.node : null);
    }
    body.append(el("div", { class: "controls" }, kernelSel.node, fieldBox));
    layout();
    const meas = el("div");
    const table = el("div", { class: "figure" });
    const gluon = el("div", { class: "figure" });
    body.append(table, meas, gluon);

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const kern = kernelSel.value;
      const params = { gpu: ctx.gpu, kernel: kern, dtype: dtypeSel.value };
      for (const x of Object.values(inputs)) if (x.kern === kern) params[x.k] = x.input.value;
      if (kern === "attention" || kern === "decode") params.head_dim = hdSel.value;
      if (kern === "attention") params.causal = causalSel.value;
      if (kern === "gemm") params.layout = layoutSel.value;
      const d = await TW.api("advisor", params);
      return () => {
        const cfg = (c) => Object.entries(c).map(([k, v]) => `${k}=${v}`).join(" ");
        TW.mount(table, el("table", { class: "kv advice", dataset: { k: "adv-table" } },
          el("tr", {}, ["#", "config", "predicted", "measured (sweep)", "TFLOP/s", "TB/s", "binds", "why"].map((h) => el("th", {}, h))),
          d.advice.map((a, i) => el("tr", { dataset: { k: `adv-row-${i}` } },
            el("td", {}, String(i + 1)),
            el("td", { class: "mono", title: cfg(a.config), dataset: { k: `adv-tag-${i}` } }, a.tag),
            el("td", { dataset: { k: `adv-ms-${i}` } }, `${fmt.fixed(a.predicted_ms * 1e3, 1)} µs`),
            el("td", { dataset: { k: `adv-measured-${i}` } }, a.measured_ms === null || a.measured_ms === undefined ? "—"
              : `${fmt.fixed(a.measured_ms * 1e3, 1)} µs (#${a.measured_rank} of ${d.measured.configs})`),
            el("td", {}, fmt.fixed(a.tflops, 1)),
            el("td", {}, fmt.fixed(a.tbps, 2)),
            el("td", { dataset: { k: `adv-binding-${i}` } }, a.binding),
            el("td", { class: "why" }, a.reason)))));
        const gm = d.gluon_measured;
        TW.mount(gluon, d.gluon && d.gluon.length
          ? [el("p", { class: "caption" }, "The Gluon GEMM (Hopper: TMA producer, wgmma consumers), its configs ranked by the model" +
              (gm ? `; measured in the Gluon sweep (${gm.configs} configs; cuBLAS ${fmt.fixed(gm.others.cublas.ms * 1e3, 1)} µs, ` +
                `matmul's dispatch ${fmt.fixed(gm.others.default.ms * 1e3, 1)} µs in that run; ${gm.file}, ${gm.gpu}, ${gm.date.slice(0, 10)})` : "")),
            el("table", { class: "kv advice", dataset: { k: "adv-gluon-table" } },
              el("tr", {}, ["#", "Gluon config", "predicted", "measured (sweep)", "binds"].map((h) => el("th", {}, h))),
              d.gluon.map((a, i) => el("tr", { dataset: { k: `adv-gluon-row-${i}` } },
                el("td", {}, String(i + 1)),
                el("td", { class: "mono", title: cfg(a.config), dataset: { k: `adv-gluon-tag-${i}` } }, a.tag),
                el("td", {}, `${fmt.fixed(a.predicted_ms * 1e3, 1)} µs`),
                el("td", { dataset: { k: `adv-gluon-measured-${i}` } }, a.measured_ms === null || a.measured_ms === undefined ? "—"
                  : `${fmt.fixed(a.measured_ms * 1e3, 1)} µs (#${a.measured_rank} of ${gm.configs})`),
                el("td", {}, a.binding))))]
          : []);
        const m = d.measured;
        TW.mount(meas, m
          ? TW.measuredBox({
            key: "adv-measured", title: "Measured best in the sweep",
            rows: [{ label: "time", measured: `${fmt.fixed(m.ms * 1e3, 1)} µs`, model: `${fmt.fixed(d.advice[0].predicted_ms * 1e3, 1)} µs (advice #1)`, k: "ms" },
              { label: "config", measured: m.tag, model: d.advice[0].tag, k: "tag" },
              ...Object.entries(m.others || {}).map(([src, o]) => ({ label: PEERS[src] || src, measured: `${fmt.fixed(o.ms * 1e3, 1)} µs`, model: "", k: `peer-${src}` }))],
            src: { file: m.file, row: m.row, gpu: m.gpu, date: m.date, tools: `torch ${m.torch}, triton ${m.triton}` },
            note: `${m.configs} configs of the space timed for this problem; command: ${m.command}`,
          })
          : el("p", { class: "caption", dataset: { k: "adv-measured-none" } },
            d.gpu.key === "h200" ? "The committed sweeps did not time this exact problem: the ranking is the model's alone."
: ["The sweeps were timed on the H200: ", TW.button("show them", () => TW.useGpu && TW.useGpu("h200")), " (switches the GPU menu)."]));
      };
    });
    ctx.onGpu(update);
    update();
  },
});
