"use strict";
(() => {
  const rows = JSON.parse(document.getElementById("rows").textContent);
  const svg = document.getElementById("chart");
  if (svg) {
    const tip = document.getElementById("tip");
    const guide = document.getElementById("guide");
    const left = +svg.dataset.left, band = +svg.dataset.band;
    const at = (event) => {
      const pt = svg.createSVGPoint();
      pt.x = event.clientX;
      pt.y = event.clientY;
      return Math.floor((pt.matrixTransform(svg.getScreenCTM().inverse()).x - left) / band);
    };
    const hide = () => { tip.style.visibility = "hidden"; guide.style.visibility = "hidden"; };
    // What the page shows for an iteration under the pointer: its numbers, as the goal file has them.
    const describe = (r) => {
      // the amounts come formatted by the one function that formats money (system/text.py)
      const [n, passing, total, failing, coverage, , , kind, metric, dollars, cumulative] = r;
      const parts = ["#" + n, kind, passing + "/" + total + " passing"];
      if (failing !== null) parts.push(failing + " failing tests");
      if (coverage !== null) parts.push("coverage " + coverage + "%");
      if (metric !== null) parts.push("metric " + metric);
      parts.push(dollars + " (total " + cumulative + ")");
      return parts.join(" · ");
    };
    svg.addEventListener("mousemove", (event) => {
      const i = at(event);
      if (i < 0 || i >= rows.length) return hide();
      const x = left + (i + 0.5) * band;
      guide.setAttribute("x1", x);
      guide.setAttribute("x2", x);
      guide.style.visibility = "visible";
      tip.textContent = describe(rows[i]);
      const box = svg.parentElement.getBoundingClientRect();
      const px = event.clientX - box.left, wide = tip.offsetWidth;
      tip.style.left = Math.max(0, Math.min(px + 12, box.width - wide)) + "px";
      tip.style.top = Math.max(0, event.clientY - box.top - 34) + "px";
      tip.style.visibility = "visible";
    });
    svg.addEventListener("mouseleave", hide);
    svg.addEventListener("click", (event) => {
      const i = at(event);
      const entry = i >= 0 && i < rows.length && document.getElementById("it-" + rows[i][0]);
      if (entry) { entry.open = true; entry.scrollIntoView({ block: "start" }); }
    });
  }
  const timeline = document.getElementById("timeline");
  const buttons = document.querySelectorAll("[data-filter]");
  buttons.forEach((b) => b.addEventListener("click", () => {
    timeline.dataset.show = b.dataset.filter;
    buttons.forEach((o) => o.setAttribute("aria-pressed", String(o === b)));
  }));
  const all = (open) => () => timeline.querySelectorAll("details.it").forEach((d) => { d.open = open; });
  document.getElementById("expand").addEventListener("click", all(true));
  document.getElementById("collapse").addEventListener("click", all(false));
  document.body.dataset.ready = String(rows.length);
})();
