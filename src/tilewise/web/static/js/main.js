/* tilewise explorer: build the page from /api/panels; each panel draws from its endpoint. */
"use strict";

(async function main() {
  const { el, api } = TW;
  const main = document.getElementById("panels");
  const toc = document.getElementById("toc");
  const gpuSel = document.getElementById("gpu");
  const listeners = [];
  // The exercise each panel poses (one per seed topic; /api/exercise answers it from the model).
  const EXERCISE = {
    access: "access", occupancy: "occupancy", latency: "latency", tensorcore: "feeding", registers: "registers",
    l2: "l2", pipeline: "pipeline", decode: "decode", moe: "moe",
  };
  const ctx = {
    gpu: null,  // set from /api/gpus's default (tilewise.gpus.DEFAULT_GPU) before any panel is built
    gpus: [],
    onGpu(fn) { listeners.push(fn); },
    gpuInfo() { return ctx.gpus.find((g) => g.key === ctx.gpu); },
  };

  let gpus, available;
  try {
    [gpus, available] = await Promise.all([api("gpus"), api("panels")]);
  } catch (e) {
    document.getElementById("loading").textContent = `The explorer's server did not answer: ${e.message}`;
    return;
  }
  ctx.gpus = gpus.gpus;
  ctx.gpu = TW.fromUrl("gpu", gpus.default, (v) => gpus.gpus.some((g) => g.key === v));
  for (const g of gpus.gpus) gpuSel.appendChild(el("option", { value: g.key }, `${g.name.replace(/^NVIDIA /, "")}`));
  gpuSel.value = ctx.gpu;
  gpuSel.dataset.k = "gpu";
  const setGpu = (v) => {
    ctx.gpu = v;
    listeners.forEach((fn) => fn(ctx.gpu));
  };
  gpuSel.addEventListener("change", () => { setGpu(gpuSel.value); TW.remember(); });
  TW.track("gpu", () => gpuSel.value, (v) => { gpuSel.value = v; }, gpus.default, setGpu);
  TW.useGpu = (v) => { gpuSel.value = v; setGpu(v); TW.remember(); };

  // The view's address: every input is in it; copy it to share the view.
  const linkOut = el("input", { type: "text", readonly: true, "aria-label": "link to this view", dataset: { k: "link-url" } });
  linkOut.hidden = true;  // shown once there is a link to show
  const copy = (url) => {
    const full = new URL(url, location.href).href;
    linkOut.value = full;
    linkOut.hidden = false;
    document.body.dataset.copied = full;
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(full).catch(() => linkOut.select());
    else linkOut.select();
  };
  const copyBtn = TW.button("Copy link to this view", () => copy(TW.urlFor()));
  copyBtn.dataset.k = "copy-link";
  document.getElementById("side").insertBefore(el("div", { class: "share" }, copyBtn, linkOut), toc);

  document.getElementById("loading").remove();
  toc.appendChild(el("div", { class: "toc-head" }, "Panels"));
  const defs = new Map(TW.panels.map((p) => [p.id, p]));
  for (const info of available.panels) {
    const def = defs.get(info.id);
    if (!def) continue; // a model without a drawing yet: nothing is shown
    const errBox = el("div", { class: "err", role: "alert" });
    errBox.hidden = true;
    const body = el("div", { class: "panel-body" });
    const tools = el("div", { class: "tools", role: "group", "aria-label": `${def.short || def.title}: share and export` });
    const card = el("section", { class: "panel", id: `panel-${def.id}`, dataset: { busy: "1" } },
      el("header", {}, el("div", {}, el("h2", {}, def.title), el("div", { class: "src" }, def.source)), tools),
      el("div", { class: "lede" }, def.lede.map((line) => el("p", {}, TW.richText(line)))),
      errBox,
      body);
    const linkBtn = TW.button("Link", () => copy(TW.urlFor(`#panel-${def.id}`)));
    linkBtn.dataset.k = `link-${def.id}`;
    linkBtn.title = "copy a link to this panel with its inputs";
    const svgBtn = TW.button("SVG", () => TW.exportSvg(card, `tilewise-${def.id}`));
    svgBtn.dataset.k = `svg-${def.id}`;
    const pngBtn = TW.button("PNG", () => TW.exportPng(card, `tilewise-${def.id}`));
    pngBtn.dataset.k = `png-${def.id}`;
    tools.append(linkBtn, svgBtn, pngBtn);
    main.appendChild(card);
    toc.appendChild(el("a", { href: `#panel-${def.id}` }, def.short || def.title));
    try {
      def.build(body, { ...ctx, card, errBox, get gpu() { return ctx.gpu; } });
      if (EXERCISE[def.id]) card.appendChild(TW.exercise(EXERCISE[def.id]));
    } catch (e) {
      errBox.textContent = `This panel failed to draw: ${e.message}`;
      errBox.hidden = false;
      card.dataset.busy = "0";
    }
  }
  // Highlight the panel in view in the table of contents.
  if ("IntersectionObserver" in window) {
    const links = new Map([...toc.querySelectorAll("a")].map((a) => [a.getAttribute("href").slice(1), a]));
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        links.forEach((a) => a.classList.remove("active"));
        const a = links.get(e.target.id);
        if (a) a.classList.add("active");
      }
    }, { rootMargin: "-20% 0px -70% 0px" });
    document.querySelectorAll(".panel").forEach((p) => io.observe(p));
  }
  document.body.dataset.url = TW.urlFor();
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  document.body.dataset.ready = "1";
})();
