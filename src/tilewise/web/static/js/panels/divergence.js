/* Divergence: a warp runs both sides of a branch with lanes masked off (tilewise.sim's trace). */
"use strict";

TW.register({
  id: "divergence",
  title: "Divergence: both sides of a branch",
  short: "Divergence",
  source: "tilewise.sim.launch on two warps · trace lines (warp instructions, active lanes) · /api/divergence",
  lede: [
    "When the 32 threads of a warp disagree on a branch, the warp runs both sides: first the if, with the other " +
      "threads masked off and idle, then the else. You pay for both. The whole warp also waits for its slowest thread in a loop.",
    "Short branches become a select that every thread executes; long ones are cured by sorting or grouping the data so " +
      "that the threads of one warp take the same path. The simulator runs each variant on two warps below.",
  ],
  build(body, ctx) {
    const { el, s, fmt } = TW;
    let seed = 1;
    const varSel = TW.select({ key: "div-variant", label: "kernel and data", value: "data",
      options: [["data", "if (x[i] > 0): random signs"], ["sorted", "the same branch, data sorted"], ["lane", "if (lane < 16): half of each warp"],
        ["warp", "if (warp == 0): whole warps agree"], ["select", "select(x[i] > 0, a, b): no branch"]],
      onChange: () => update() });
    const again = TW.button("new random data", () => { seed += 1; update(); });
    body.append(el("div", { class: "controls" }, varSel.node, again));
    const st = {
      i0: TW.stat("div-inst-0", "warp 0: instructions issued"),
      e0: TW.stat("div-eff-0", "warp 0: lanes doing work"),
      i1: TW.stat("div-inst-1", "warp 1: instructions issued"),
      e1: TW.stat("div-eff-1", "warp 1: lanes doing work"),
    };
    const lanesFig = el("div", { class: "figure" });
    const codeFig = el("div", { class: "figure" });
    body.append(el("div", { class: "stats" }, Object.values(st).map((x) => x.node)), lanesFig, codeFig,
      el("div", { class: "legend" }, [["#2563eb", "took the if"], ["#f59e0b", "took the else"], ["#0f9d76", "computed both, selected"], ["#e6e9ef", "masked off"]]
        .map(([c, t]) => el("span", {}, el("i", { style: { background: c } }), t))));
    const SIDE = { 1: "#2563eb", 2: "#f59e0b", 3: "#0f9d76" };

    function drawLanes(d) {
      const W = 940, cw = 25, left = 70;
      const g = s("svg", { viewBox: `0 0 ${W} 96`, width: W, height: 96, role: "img", "aria-label": "lanes" });
      d.warps.forEach((w, wi) => {
        const y = 8 + wi * 42;
        g.append(s("text", { x: 0, y: y + 20, "font-size": 12, "font-weight": 700 }, `warp ${wi}`));
        w.side.forEach((sd, lane) => {
          g.append(s("rect", { x: left + lane * cw, y, width: cw - 3, height: 28, rx: 4, fill: SIDE[sd] || "#e6e9ef" },
            s("title", {}, `lane ${lane}: x = ${w.x[lane].toFixed(2)}`)),
          s("text", { x: left + lane * cw + (cw - 3) / 2, y: y + 18, "text-anchor": "middle", "font-size": 10, "font-weight": 700, style: { fill: "#fff" } },
            w.x[lane] > 0 ? "+" : "−"));
        });
      });
      TW.mount(lanesFig, g);
    }

    function drawCode(d) {
      const W = 940, rowH = 21, codeW = 440, barX = codeW + 20, barW = 150, colW = 240;
      const H = d.source.length * rowH + 30;
      const g = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "lines" });
      g.append(s("rect", { x: 0, y: 0, width: codeW, height: H, rx: 8, fill: "#0f172a" }));
      d.warps.forEach((w, wi) => g.append(s("text", { x: barX + wi * colW, y: 16, "font-size": 11.5, "font-weight": 700 }, `warp ${wi}: lanes at work`)));
      d.source.forEach((src, i) => {
        const y = 24 + i * rowH;
        g.append(s("text", { x: 12, y: y + 14, class: "mono", "font-size": 11.5, style: { fill: "#cbd5e1", whiteSpace: "pre" } }, src.text));
        d.warps.forEach((w, wi) => {
          const rec = w.lines[String(src.line)];
          if (!rec) return;
          const slots = d.warp_size * rec.inst; // lanes the issued instructions could have used
          const x0 = barX + wi * colW;
          g.append(s("rect", { x: x0, y: y + 3, width: barW, height: 14, rx: 2, fill: "#eef1f6" }),
            s("rect", { class: "cell-anim", x: x0, y: y + 3, width: (barW * rec.lanes) / slots, height: 14, rx: 2, fill: rec.lanes < slots ? "#e8590c" : "#0f9d76" }),
            s("text", { x: x0 + barW + 5, y: y + 14, class: "mono", "font-size": 10.5 }, `${rec.lanes}/${slots}`));
        });
      });
      TW.mount(codeFig, g);
    }

    const update = TW.live(ctx.card, ctx.errBox, async () => {
      const d = await TW.api("divergence", { variant: varSel.value, seed });
      return () => {
        st.i0.set(fmt.int(d.warps[0].warp_instructions));
        st.e0.set(fmt.pct(d.warps[0].lane_efficiency, 0), d.warps[0].lane_efficiency < 1 ? "hot" : "ok");
        st.i1.set(fmt.int(d.warps[1].warp_instructions));
        st.e1.set(fmt.pct(d.warps[1].lane_efficiency, 0), d.warps[1].lane_efficiency < 1 ? "hot" : "ok");
        drawLanes(d);
        drawCode(d);
      };
    });
    update();
  },
});
