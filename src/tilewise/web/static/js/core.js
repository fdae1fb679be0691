/* tilewise explorer core: DOM and SVG builders, controls, the JSON client, formatting.
 *
 * Nothing here computes a model figure. Panels ask an endpoint and draw what it returns;
 * the helpers below only build elements and format numbers for reading.
 */
"use strict";

const TW = (() => {
  const SVGNS = "http://www.w3.org/2000/svg";
  const panels = [];

  function setAttrs(node, attrs, isSvg) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "style") Object.assign(node.style, v);
      else if (k === "class") isSvg ? node.setAttribute("class", v) : (node.className = v);
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }

  /** An HTML element: el("div", {class: "x"}, child, "text", ...). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs, false);
    return append(node, children);
  }

  /** An SVG element. */
  function s(tag, attrs, ...children) {
    const node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs, true);
    return append(node, children);
  }

  /** Paragraphs from a list of strings; `code` spans written as `...`. */
  function prose(lines, cls = "prose") {
    return el("div", { class: cls }, lines.map((line) => el("p", {}, richText(line))));
  }

  function richText(text) {
    const out = [];
    String(text).split(/(`[^`]+`)/).forEach((part) => {
      if (part.startsWith("`") && part.endsWith("`") && part.length > 1) out.push(el("code", {}, part.slice(1, -1)));
      else if (part) out.push(part);
    });
    return out;
  }

  // ------------------------------------------------------------------ formatting (reading aid only)
  const nf = (d) => new Intl.NumberFormat("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  const fmt = {
    int: (v) => (v === null || v === undefined ? "—" : Math.round(v).toLocaleString("en-US")),
    fixed: (v, d = 2) => (v === null || v === undefined ? "—" : nf(d).format(v)),
    pct: (v, d = 1) => (v === null || v === undefined ? "—" : `${nf(d).format(100 * v)}%`),
    bytes(v) {
      if (v === null || v === undefined) return "—";
      if (v >= 1 << 30) return `${nf(2).format(v / (1 << 30))} GiB`;
      if (v >= 1 << 20) return `${nf(2).format(v / (1 << 20))} MiB`;
      if (v >= 1024) return `${+(v / 1024).toFixed(2)} KB`;
      return `${v} B`;
    },
    si(v, unit = "", d = 3) {
      if (v === null || v === undefined) return "—";
      const units = [["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
      for (const [p, f] of units) if (Math.abs(v) >= f) return `${+(v / f).toPrecision(d)} ${p}${unit}`;
      return `${+v.toPrecision(d)} ${unit}`;
    },
    time(sec) {
      if (sec === null || sec === undefined) return "—";
      if (sec >= 1) return `${+sec.toPrecision(3)} s`;
      if (sec >= 1e-3) return `${+(sec * 1e3).toPrecision(3)} ms`;
      if (sec >= 1e-6) return `${+(sec * 1e6).toPrecision(3)} µs`;
      return `${+(sec * 1e9).toPrecision(3)} ns`;
    },
  };


  // ------------------------------------------------------------------- shareable state (the URL)
  // Every control registers under its data-k key; its value lives in the query string when it differs
  // from the default. A change pushes a history entry (debounced), back/forward and reload restore.
  const tracked = new Map();
  let pushTimer = null;

  function fromUrl(key, fallback, valid) {
    const v = new URLSearchParams(location.search).get(key);
    return v !== null && valid(v) ? v : fallback;
  }

  function track(key, get, set, def, fire) {
    tracked.set(key, { get, set, def: String(def), fire });
  }

  function urlFor(hash = location.hash) {
    const q = new URLSearchParams();
    for (const [k, c] of [...tracked.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const v = String(c.get());
      if (v !== c.def) q.set(k, v);
    }
    const qs = q.toString();
    return `${location.pathname}${qs ? `?${qs}` : ""}${hash}`;
  }

  /** Put the view in the address bar: a new history entry (a reader's change), or with `replace` the
   * current one corrected (a panel adjusting its own input, e.g. an animation reset after new data). */
  function remember({ replace = false } = {}) {
    const write = () => {
      const next = urlFor();
      if (next !== `${location.pathname}${location.search}${location.hash}`) {
        if (replace) history.replaceState(null, "", next);
        else history.pushState(null, "", next);
      }
      document.body.dataset.url = next;
    };
    if (replace) { if (!pushTimer) write(); return; }
    clearTimeout(pushTimer);
    pushTimer = setTimeout(() => { pushTimer = null; write(); }, 250);
  }

  function restore() {
    const q = new URLSearchParams(location.search);
    for (const [k, c] of tracked) {
      const want = q.has(k) ? q.get(k) : c.def;
      if (String(c.get()) !== want) { c.set(want); c.fire(want); }
    }
    document.body.dataset.url = urlFor();
  }
  window.addEventListener("popstate", () => { clearTimeout(pushTimer); pushTimer = null; restore(); });

  // ----------------------------------------------------------------------------- controls
  /** A labelled range slider. `format(value)` renders the value shown beside the label. */
  function slider({ key, label, min, max, step = 1, value, format = (v) => String(v), onInput }) {
    const def = value;
    value = Number(fromUrl(key, value, (v) => /^-?\d+(\.\d+)?$/.test(v) && +v >= min && +v <= max));
    const out = el("span", { class: "ctl-val", dataset: { k: `${key}-value` } }, format(value));
    const input = el("input", {
      type: "range", min, max, step, value, "aria-label": label, dataset: { k: key },
    });
    input.addEventListener("input", () => {
      out.textContent = format(Number(input.value));
      onInput && onInput(Number(input.value));
      remember();
    });
    track(key, () => input.value, (v) => { input.value = v; out.textContent = format(Number(input.value)); }, def,
      (v) => onInput && onInput(Number(v)));
    const node = el("label", { class: "ctl" }, el("span", { class: "ctl-top" }, el("span", {}, label), out), input);
    return {
      node,
      input,
      get value() { return Number(input.value); },
      set(v) { input.value = v; out.textContent = format(Number(input.value)); },
      setMax(m) { input.max = m; },
    };
  }

  function select({ key, label, options, value, onChange }) {
    const sel = el("select", { "aria-label": label, dataset: { k: key } },
      options.map(([v, text]) => el("option", { value: v }, text)));
    const def = String(value);
    sel.value = fromUrl(key, def, (v) => options.some(([o]) => String(o) === v));
    sel.addEventListener("change", () => { onChange && onChange(sel.value); remember(); });
    track(key, () => sel.value, (v) => { sel.value = v; }, def, (v) => onChange && onChange(v));
    return { node: el("label", { class: "ctl" }, el("span", {}, label), sel), input: sel, get value() { return sel.value; } };
  }

  function button(text, onClick, cls = "") {
    return el("button", { type: "button", class: cls, onclick: onClick }, text);
  }

  function stat(key, label, cls = "") {
    const v = el("div", { class: "v", dataset: { k: key } }, "—");
    const node = el("div", { class: `stat ${cls}` }, v, el("div", { class: "l" }, label));
    return { node, set(text, klass) { v.textContent = text; if (klass !== undefined) node.className = `stat ${klass}`; } };
  }

  // ---------------------------------------------------------------------------- JSON client
  async function api(path, params = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const url = `/api/${path}${q.toString() ? `?${q}` : ""}`;
    const res = await fetch(url, { headers: { Accept: "application/json" } });
    const data = await res.json();
    if (!res.ok) {
      const e = new Error(data && data.error ? data.error : `${res.status} from ${url}`);
      e.status = res.status;
      throw e;
    }
    return data;
  }

  /**
   * Wrap a panel's fetch-and-draw so that only the newest request draws, errors show in the
   * panel (a 400's message, never a crash), and `data-busy` tells tests when it is settled.
   */
  function live(card, errBox, fetchDraw) {
    let seq = 0;
    return async function update() {
      const mine = ++seq;
      card.dataset.busy = "1";
      try {
        const draw = await fetchDraw();
        if (mine !== seq) return;
        errBox.textContent = "";
        errBox.hidden = true;
        draw();
      } catch (e) {
        if (mine !== seq) return;
        errBox.textContent = e.message;
        errBox.hidden = false;
      } finally {
        if (mine === seq) {
          card.dataset.busy = "0";
          card.dataset.updates = String(Number(card.dataset.updates || 0) + 1);
        }
      }
    };
  }

  /** Replace a container's children. */
  function mount(container, ...children) {
    container.replaceChildren();
    return append(container, children);
  }

  // A qualitative palette for waves, experts and programs.
  const palette = ["#2563eb", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#0ea5e9", "#ec4899", "#84cc16",
    "#f97316", "#14b8a6", "#6366f1", "#a855f7", "#eab308", "#22c55e", "#06b6d4", "#e11d48"];
  const color = (i) => palette[((i % palette.length) + palette.length) % palette.length];

  /**
   * A line or step chart of points returned by an endpoint. Axis ranges come from the data.
   * `series`: [{points, color, label}] (or `points` for one); `marker`: an x to mark;
   * `hline`: a y to mark (a limit); `yFormat`/`xFormat`: tick labels.
   */
  function chart({
    width = 300, height = 150, points, series, x, y, xLabel, yLabel, yMax, yMin = 0, marker, hline, hlineLabel,
    step = true, color: c = "#2563eb", yFormat = fmt.int, xFormat = fmt.int,
  }) {
    const pad = { l: 50, r: 10, t: 10, b: 30 };
    const all = series || [{ points, color: c }];
    const xs = all.flatMap((sr) => sr.points.map(x));
    const ys = all.flatMap((sr) => sr.points.map(y)).filter((v) => v !== null && v !== undefined);
    const x0 = Math.min(...xs), x1 = Math.max(...xs);
    const y1 = yMax !== undefined ? yMax : Math.max(1, ...ys, hline || 0);
    const sx = (v) => pad.l + ((v - x0) / (x1 - x0 || 1)) * (width - pad.l - pad.r);
    const sy = (v) => height - pad.b - ((Math.min(v, y1) - yMin) / (y1 - yMin || 1)) * (height - pad.t - pad.b);
    const paths = all.map((sr) => {
      let d = "";
      sr.points.forEach((p, i) => {
        const X = sx(x(p)), Y = sy(y(p));
        if (i === 0) d += `M${X},${Y}`;
        else d += step ? `H${X}V${Y}` : `L${X},${Y}`;
      });
      return s("path", { d, fill: "none", stroke: sr.color || c, "stroke-width": 2 });
    });
    const ticks = [yMin, (yMin + y1) / 2, y1];
    const legend = all.filter((sr) => sr.label).map((sr, i) =>
      s("text", { x: width - pad.r, y: pad.t + 10 + 12 * i, "text-anchor": "end", "font-size": 10, "font-weight": 700, style: { fill: sr.color } }, sr.label));
    return s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img" },
      s("g", { class: "grid" }, ticks.map((t) => s("line", { x1: pad.l, x2: width - pad.r, y1: sy(t), y2: sy(t) }))),
      ticks.map((t) => s("text", { x: pad.l - 5, y: sy(t) + 3, "text-anchor": "end", class: "small" }, yFormat(t))),
      hline !== undefined ? [
        s("line", { x1: pad.l, x2: width - pad.r, y1: sy(hline), y2: sy(hline), stroke: "#b42318", "stroke-width": 1.2, "stroke-dasharray": "5 3" }),
        hlineLabel ? s("text", { x: pad.l + 4, y: sy(hline) - 4, class: "small", style: { fill: "#b42318" } }, hlineLabel) : null,
      ] : null,
      paths,
      marker !== undefined ? s("line", {
        x1: sx(marker), x2: sx(marker), y1: pad.t, y2: height - pad.b, stroke: "#e8590c", "stroke-width": 1.5,
        "stroke-dasharray": "4 3",
      }) : null,
      legend,
      s("text", { x: pad.l, y: height - 8, class: "small" }, xFormat(x0)),
      s("text", { x: width - pad.r, y: height - 8, class: "small", "text-anchor": "end" }, xFormat(x1)),
      s("text", { x: (pad.l + width - pad.r) / 2, y: height - 8, class: "small", "text-anchor": "middle" }, xLabel),
      s("text", { x: 4, y: pad.t + 2, class: "small", transform: `rotate(90 4 ${pad.t + 2})` }, yLabel || ""),
    );
  }


  // ------------------------------------------------------------------ measured beside the model
  /**
   * A box of figures measured on the hardware beside the model's, naming the committed row each came
   * from (a link to /api/row shows it). rows: [{label, measured, model, k}]; src: {file, row, gpu, date, tools}.
   */
  function measuredBox({ key, title, rows, src, note }) {
    const link = src.file !== undefined && src.row !== undefined
      ? el("a", { href: `/api/row?${new URLSearchParams({ file: src.file, row: src.row })}`, target: "_blank", rel: "noopener",
        dataset: { k: `${key}-link` } }, `${src.file} · row ${src.row}`)
      : el("span", {}, src.file || "");
    return el("div", { class: "measured", dataset: { k: key } },
      el("div", { class: "measured-head" }, el("strong", {}, title || "Measured"), " ",
        el("span", { class: "muted" }, [src.gpu, src.date, src.tools].filter(Boolean).join(" · "))),
      el("table", { class: "kv measured-kv" },
        el("tr", {}, el("th", {}, ""), el("th", {}, "measured"), el("th", {}, "model")),
        rows.map((r) => el("tr", {}, el("td", {}, r.label),
          el("td", { dataset: { k: `${key}-${r.k}` } }, r.measured), el("td", { dataset: { k: `${key}-${r.k}-model` } }, r.model)))),
      el("div", { class: "caption" }, "from ", link, note ? ` — ${note}` : ""));
  }

  /**
   * GEMM benchmark rows of the H200 beside the time model's prediction for the config each ran, and the roofline
   * floor (hierarchy and decode panels).
   * `rows`: the rows of this exact shape; `all`: every measured row of the family (listed as links).
   */
  function gemmMeasured(key, rows, gpu, shape, all) {
    if (gpu.key !== "h200") {
      return el("p", { class: "caption", dataset: { k: `${key}-none` } }, "Benchmark rows were measured on the H200: ",
        button("show them", () => TW.useGpu && TW.useGpu("h200")), " (switches the GPU menu).");
    }
    const others = (all || []).filter((r) => !rows.includes(r));
    const list = others.length ? el("div", { class: "caption" }, "Also measured: ", others.map((r, i) => [i ? ", " : "",
      el("a", { href: `/api/row?${new URLSearchParams({ file: r.file, row: r.row })}`, target: "_blank", rel: "noopener" },
        `M = ${r.shape.split("x")[0]}: ${fmt.fixed(r.ours_ms * 1e3, 1)} µs`)])) : null;
    if (!rows.length) {
      return el("div", {}, el("p", { class: "caption", dataset: { k: `${key}-none` } },
        `No committed H200 benchmark row has the shape ${shape}; the figures above are the model's alone.`), list);
    }
    return el("div", {}, rows.map((r) => measuredBox({
      key, title: `Measured: ${r.kernel} ${r.shape.replaceAll("x", " × ")} ${r.dtype}`,
      rows: [
        { label: "time", measured: `${fmt.fixed(r.ours_ms * 1e3, 1)} µs`,
          model: r.model_ms == null ? "—" : `${fmt.fixed(r.model_ms * 1e3, 1)} µs (time model, ${r.model_binding} binds)`, k: "ms" },
        { label: "floor", measured: `${fmt.fixed(100 / r.measured_over_floor, 0)}% of the roof`,
          model: `${fmt.fixed(r.floor_ms * 1e3, 1)} µs (roofline, ${r.floor_bound}-bound)`, k: "floor" },
        { label: "TFLOP/s", measured: fmt.fixed(r.tflops, 1), model: r.model_tflops == null ? "—" : fmt.fixed(r.model_tflops, 1), k: "tflops" },
      ],
      src: { file: r.file, row: r.row, gpu: r.gpu, date: r.date, tools: `torch ${r.torch}, triton ${r.triton}` },
      note: `config ${r.config}; ${r.peer} ${fmt.fixed(r.peer_ms * 1e3, 1)} µs; command: ${r.command}`,
    })), list);
  }

  // ------------------------------------------------------------------------------ exercises
  /**
   * One exercise of a topic: the server poses it (/api/exercise), takes the reader's answer and returns the
   * model's answer and its reasoning. The page compares nothing itself.
   */
  function exercise(topic) {
    const box = el("div", { class: "exercise", dataset: { k: `ex-${topic}` } });
    let variant = Number(fromUrl(`ex-${topic}`, "0", (v) => /^\d{1,6}$/.test(v)));
    const q = el("p", { class: "ex-q", dataset: { k: `ex-${topic}-question` } }, "…");
    const slot = el("span", { class: "ex-in" });
    const verdict = el("div", { class: "ex-verdict", role: "status", "aria-live": "polite", dataset: { k: `ex-${topic}-verdict` } });
    let input = null;
    const check = button("Check", () => submit(), "primary");
    check.dataset.k = `ex-${topic}-check`;
    const another = button("Another problem", () => { variant += 1; remember(); load(); });
    another.dataset.k = `ex-${topic}-next`;
    const form = el("form", { class: "ex-form", onsubmit: (e) => { e.preventDefault(); submit(); } }, slot, check, another);
    box.append(el("div", { class: "ex-head" }, "Try it"), q, form, verdict);
    track(`ex-${topic}`, () => variant, (v) => { variant = Number(v); }, 0, () => load());

    async function load() {
      verdict.replaceChildren();
      box.dataset.busy = "1";
      const d = await api("exercise", { topic, variant });
      q.textContent = "";
      append(q, richText(d.question));
      if (d.kind === "choice") {
        input = el("select", { "aria-label": "your answer", dataset: { k: `ex-${topic}-answer` } },
          el("option", { value: "" }, "choose…"), d.options.map(([v, text]) => el("option", { value: v }, text)));
      } else {
        input = el("input", { type: "text", inputmode: "decimal", size: 8, "aria-label": "your answer", placeholder: d.unit || "answer",
          dataset: { k: `ex-${topic}-answer` } });
      }
      slot.replaceChildren(input);
      box.dataset.busy = "0";
    }

    async function submit() {
      if (!input || !input.value.trim()) { verdict.textContent = "Type or pick an answer first."; return; }
      box.dataset.busy = "1";
      try {
        const d = await api("exercise", { topic, variant, answer: input.value.trim() });
        const shown = d.kind === "choice" ? (d.options.find(([v]) => v === d.answer) || [d.answer, d.answer])[1] : `${d.answer}${d.unit ? ` ${d.unit}` : ""}`;
        verdict.replaceChildren(
          el("p", { class: d.correct ? "ex-right" : "ex-wrong", dataset: { k: `ex-${topic}-result` } }, d.correct ? "Right." : "Not quite."),
          el("p", {}, "The model's answer: ", el("strong", { dataset: { k: `ex-${topic}-answer-shown` } }, shown),
            d.kind === "number" && d.tolerance ? ` (within ±${d.tolerance})` : ""),
          prose(d.reasoning));
      } catch (e) {
        verdict.textContent = e.message;
      } finally {
        box.dataset.busy = "0";
      }
    }
    load();
    return box;
  }

  // ------------------------------------------------------------------------- export a figure
  const EXPORT_STYLE = "svg{fill:#1b2230}text{font-family:system-ui,sans-serif}text.mono{font-family:monospace}" +
    "text.small{font-size:10px;fill:#5d6778}.grid line{stroke:#eceff3}";

  const xmlEscape = (v) => String(v).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  /** The panel's drawings stacked into one standalone SVG document (string): its title on top, the
   * drawings in page order, its legend (if any) underneath, with a margin all round. */
  function panelSvg(card) {
    const M = 16;
    const svgs = [...card.querySelectorAll(".panel-body svg")].filter((g) => g.getAttribute("viewBox"));
    const title = card.querySelector("h2")?.textContent || "";
    let y = M + 26, w = 480;
    const parts = [`<text x="${M}" y="${M + 14}" font-size="16" font-weight="700">${xmlEscape(title)}</text>`];
    for (const g of svgs) {
      const [, , vw, vh] = g.getAttribute("viewBox").split(/\s+/).map(Number);
      parts.push(`<svg x="${M}" y="${y}" width="${vw}" height="${vh}" viewBox="0 0 ${vw} ${vh}" overflow="visible">${g.innerHTML}</svg>`);
      y += vh + 12; w = Math.max(w, vw + 2 * M + 40);
    }
    let x = M;
    const items = [...card.querySelectorAll(".legend > span")];
    if (items.length) y += 4;
    for (const it of items) {
      const colour = it.querySelector("i")?.style.background || "#999";
      const label = it.textContent.trim();
      parts.push(`<rect x="${x}" y="${y}" width="11" height="11" rx="3" fill="${xmlEscape(colour)}"/>`,
        `<text x="${x + 16}" y="${y + 10}" font-size="12" class="small" style="font-size:12px">${xmlEscape(label)}</text>`);
      x += 30 + 7 * label.length;
    }
    if (items.length) y += 24;
    const h = y + M - 12;
    return `<svg xmlns="${SVGNS}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">` +
      `<style>${EXPORT_STYLE}</style><rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>`;
  }

  function download(name, href) {
    const a = el("a", { href, download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  function exportSvg(card, name) {
    const text = panelSvg(card);
    download(`${name}.svg`, `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`);
    return text;
  }

  function exportPng(card, name) {
    const text = panelSvg(card);
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = img.width * 2; c.height = img.height * 2;
      const g2 = c.getContext("2d");
      g2.scale(2, 2);
      g2.drawImage(img, 0, 0);
      download(`${name}.png`, c.toDataURL("image/png"));
    };
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
  }

  /** Register a panel: {id, title, source, lede: [lines], build(body, ctx)}. */
  function register(def) { panels.push(def); }

  return {
    el, s, prose, richText, fmt, slider, select, button, stat, api, live, mount, color, palette, chart, register, panels,
    track, remember, restore, fromUrl, urlFor, measuredBox, gemmMeasured, exercise, useGpu: null, panelSvg, exportSvg, exportPng,
  };
})();
