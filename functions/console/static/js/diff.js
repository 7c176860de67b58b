// A line diff (longest common subsequence), enough for records of up to 64 KB.

import { h } from "./ui.js";

const MAX_CELLS = 4_000_000;

export function diffLines(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  // Common head and tail first: most edits touch a few lines.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const out = a.slice(0, start).map((text) => [" ", text]);
  if (midA.length * midB.length > MAX_CELLS) {
    midA.forEach((text) => out.push(["-", text]));
    midB.forEach((text) => out.push(["+", text]));
  } else {
    const n = midA.length;
    const m = midB.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = midA[i] === midB[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        out.push([" ", midA[i]]);
        i++;
        j++;
      } else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) {
        out.push(["+", midB[j++]]);
      } else {
        out.push(["-", midA[i++]]);
      }
    }
  }
  a.slice(endA).forEach((text) => out.push([" ", text]));
  return out;
}

export function renderDiff(before, after, label) {
  const rows = diffLines(before, after).map(([op, text]) =>
    h(
      "div",
      { class: op === "+" ? "add" : op === "-" ? "del" : "same" },
      h("span", { class: "op", "aria-label": op === "+" ? "added" : op === "-" ? "removed" : "" }, op),
      text,
    ),
  );
  return h("div", { class: "diff", role: "region", "aria-label": label, tabindex: "0" }, rows);
}
