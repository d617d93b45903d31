// view.js — the attention drawings shared by the static explorer page (page.go inlines this file
// into page.html) and the live explorer (explorer/live serves it). A weight matrix w is [L][L]
// (query rows, key columns; rows may be typed-array views). It defines one global, AttentionView.
"use strict";
const AttentionView = (() => {
  const SVG = "http://www.w3.org/2000/svg";

  // color is head h's hue among nh heads.
  const color = (h, nh) => `hsl(${Math.round(h * 360 / nh)}, 70%, 42%)`;

  // hover shows only the lines from (left) or into (right) token i of svg; null shows every line.
  function hover(svg, side, i) {
    for (const line of svg.querySelectorAll("line.attn")) {
      const match = side === null || (side === "left" ? +line.dataset.q === i : +line.dataset.k === i);
      line.style.display = match ? "" : "none";
    }
    for (const t of svg.querySelectorAll("text.tok")) {
      let cls = "tok tok-" + t.dataset.side;
      if (side !== null) {
        if (t.dataset.side === side && +t.dataset.i === i) cls += " active";
        else if (t.dataset.side === side) cls += " dim";
      }
      t.setAttribute("class", cls);
    }
  }

  // headView draws one head: each query token (left) joined to the keys it attends to (right),
  // opacity = weight, lines under 1% left out; hovering a token shows only its lines.
  function headView(svg, tokens, w, stroke, layer, head) {
    const L = tokens.length, rowH = 18, colW = 150, gap = 160, top = 10;
    svg.setAttribute("width", 2 * colW + gap);
    svg.setAttribute("height", top + L * rowH + 10);
    svg.setAttribute("data-layer", layer);
    svg.setAttribute("data-head", head);
    svg.replaceChildren();
    const lines = document.createElementNS(SVG, "g");
    svg.appendChild(lines);
    const y = (i) => top + i * rowH + rowH / 2;
    for (let q = 0; q < L; q++) {
      for (let k = 0; k < L; k++) {
        const p = w[q][k];
        if (p < 0.01) continue;
        const line = document.createElementNS(SVG, "line");
        line.setAttribute("x1", colW); line.setAttribute("y1", y(q));
        line.setAttribute("x2", colW + gap); line.setAttribute("y2", y(k));
        line.setAttribute("stroke", stroke);
        line.setAttribute("stroke-width", 2);
        line.setAttribute("stroke-opacity", p.toFixed(3));
        line.dataset.q = q; line.dataset.k = k; line.dataset.w = p;
        line.setAttribute("class", "attn");
        lines.appendChild(line);
      }
    }
    for (const side of ["left", "right"]) {
      for (let i = 0; i < L; i++) {
        const t = document.createElementNS(SVG, "text");
        t.textContent = tokens[i];
        t.setAttribute("y", y(i) + 4);
        if (side === "left") { t.setAttribute("x", colW - 6); t.setAttribute("text-anchor", "end"); }
        else { t.setAttribute("x", colW + gap + 6); }
        t.setAttribute("class", "tok tok-" + side);
        t.dataset.i = i; t.dataset.side = side;
        t.addEventListener("mouseenter", () => hover(svg, side, i));
        t.addEventListener("mouseleave", () => hover(svg, null, null));
        svg.appendChild(t);
      }
    }
    hover(svg, null, null);
  }

  const shade = (p) => { const v = Math.round(255 * (1 - Math.min(1, p))); return `rgb(${v},${v},255)`; };

  // matrix draws w as an L×L grid of cells (darker = more weight), for the model view.
  function matrix(canvas, w, L, cell) {
    canvas.width = L * cell; canvas.height = L * cell;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (let q = 0; q < L; q++) for (let k = 0; k < L; k++) {
      ctx.fillStyle = shade(w[q][k]);
      ctx.fillRect(k * cell, q * cell, cell, cell);
    }
  }

  // thumbnail draws w one pixel per weight (ImageData, fast for hundreds of heads); CSS scales it.
  function thumbnail(canvas, w, L) {
    canvas.width = L; canvas.height = L;
    const ctx = canvas.getContext("2d"), img = ctx.createImageData(L, L);
    for (let q = 0; q < L; q++) for (let k = 0; k < L; k++) {
      const v = Math.round(255 * (1 - Math.min(1, w[q][k]))), o = 4 * (q * L + k);
      img.data[o] = v; img.data[o + 1] = v; img.data[o + 2] = 255; img.data[o + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
  }

  // heatmap draws w with the tokens as row and column labels (when the cells are large enough).
  function heatmap(canvas, tokens, w) {
    const L = tokens.length;
    const cell = Math.max(2, Math.min(22, Math.floor(440 / L)));
    const labels = cell >= 8, margin = labels ? 90 : 0;
    canvas.width = margin + L * cell; canvas.height = margin + L * cell;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (let q = 0; q < L; q++) for (let k = 0; k < L; k++) {
      ctx.fillStyle = shade(w[q][k]);
      ctx.fillRect(margin + k * cell, margin + q * cell, cell, cell);
    }
    if (!labels) return;
    ctx.fillStyle = "#222"; ctx.font = `${Math.min(12, cell - 1)}px monospace`;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (let i = 0; i < L; i++) {
      ctx.fillText(tokens[i].slice(0, 12), margin - 4, margin + i * cell + cell / 2);
      ctx.save();
      ctx.translate(margin + i * cell + cell / 2, margin - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(tokens[i].slice(0, 12), 0, 0);
      ctx.restore();
    }
  }

  return { color, hover, headView, matrix, thumbnail, heatmap };
})();
