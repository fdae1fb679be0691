/* tilewise explorer: build the page from /api/panels; each panel draws from its endpoint. */
"use strict";

(async function main() {
  const { el, api } = TW;
  const main = document.getElementById("panels");
  const toc = document.getElementById("toc");
  const gpuSel = document.getElementById("gpu");
  const listeners = [];
  const ctx = {
    gpu: "h100-sxm",
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
  ctx.gpu = gpus.default;
  for (const g of gpus.gpus) gpuSel.appendChild(el("option", { value: g.key }, `${g.name.replace(/^NVIDIA /, "")}`));
  gpuSel.value = ctx.gpu;
  gpuSel.addEventListener("change", () => {
    ctx.gpu = gpuSel.value;
    listeners.forEach((fn) => fn(ctx.gpu));
  });

  document.getElementById("loading").remove();
  toc.appendChild(el("div", { class: "toc-head" }, "Panels"));
  const defs = new Map(TW.panels.map((p) => [p.id, p]));
  for (const info of available.panels) {
    const def = defs.get(info.id);
    if (!def) continue; // a model without a drawing yet: nothing is shown
    const errBox = el("div", { class: "err", role: "alert" });
    errBox.hidden = true;
    const body = el("div", { class: "panel-body" });
    const card = el("section", { class: "panel", id: `panel-${def.id}`, dataset: { busy: "1" } },
      el("header", {}, el("h2", {}, def.title), el("div", { class: "src" }, def.source)),
      el("div", { class: "lede" }, def.lede.map((line) => el("p", {}, TW.richText(line)))),
      errBox,
      body);
    main.appendChild(card);
    toc.appendChild(el("a", { href: `#panel-${def.id}` }, def.short || def.title));
    try {
      def.build(body, { ...ctx, card, errBox, get gpu() { return ctx.gpu; } });
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
  document.body.dataset.ready = "1";
})();
