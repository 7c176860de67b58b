// Changes per day by operation over the last 30 days, as an inline SVG built with DOM
// APIs (stacked bars), with the same numbers in a table for screen readers.

import { h } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
const DAYS = 30;

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

export function dayKeys(now = new Date()) {
  const keys = [];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = DAYS - 1; i >= 0; i--) keys.push(new Date(today - i * 86400000).toISOString().slice(0, 10));
  return keys;
}

export function countByDay(events, keys) {
  const counts = new Map(keys.map((k) => [k, new Map()]));
  const operations = new Set();
  for (const event of events) {
    const day = counts.get(String(event.time).slice(0, 10));
    if (!day) continue;
    operations.add(event.operation);
    day.set(event.operation, (day.get(event.operation) || 0) + 1);
  }
  return { counts, operations: [...operations].sort() };
}

export function renderChart(events, now = new Date()) {
  const keys = dayKeys(now);
  const { counts, operations } = countByDay(events, keys);
  const total = [...counts.values()].map((m) => [...m.values()].reduce((a, b) => a + b, 0));
  const max = Math.max(1, ...total);
  const width = 600;
  const height = 200;
  const bar = width / DAYS;
  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${height + 20}`,
    role: "img",
    "aria-label": `Changes per day by operation, last ${DAYS} days: ${total.reduce((a, b) => a + b, 0)} in all`,
    class: "chart",
    "data-total": total.reduce((a, b) => a + b, 0),
  });
  keys.forEach((key, i) => {
    let y = height;
    operations.forEach((op, k) => {
      const n = counts.get(key).get(op) || 0;
      if (!n) return;
      const bh = (n / max) * (height - 10);
      y -= bh;
      chart.append(
        svg(
          "rect",
          { x: i * bar + 1, y, width: bar - 2, height: bh, class: `op${k % 8}`, "data-day": key, "data-operation": op, "data-count": n },
          svg("title", {}, `${key} ${op}: ${n}`),
        ),
      );
    });
  });
  chart.append(svg("line", { x1: 0, y1: height, x2: width, y2: height, class: "axis" }));
  chart.append(svg("text", { x: 0, y: height + 16, class: "label" }, keys[0]));
  chart.append(svg("text", { x: width, y: height + 16, class: "label", "text-anchor": "end" }, keys[DAYS - 1]));
  const legend = h(
    "ul",
    { class: "legend" },
    operations.map((op, k) => h("li", {}, h("span", { class: `swatch op${k % 8}`, "aria-hidden": "true" }), op)),
  );
  const table = h(
    "table",
    { class: "chart-table" },
    h("caption", {}, "Changes per day by operation"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "day"), operations.map((op) => h("th", { scope: "col" }, op)))),
    h(
      "tbody",
      {},
      keys
        .filter((key) => counts.get(key).size)
        .map((key) => h("tr", {}, h("th", { scope: "row" }, key), operations.map((op) => h("td", {}, counts.get(key).get(op) || 0)))),
    ),
  );
  const details = h("details", {}, h("summary", {}, "The numbers as a table"), table);
  return h("figure", { class: "chart-box" }, chart, legend, details);
}
