/**
 * Minimal SVG line charts, no dependency: one panel per metric, one polyline per series,
 * shaded bands for fault windows, and a legend. `chart()` stacks panels into one file.
 */

const COLORS = ['#1f6feb', '#8250df', '#d1242f', '#bf8700', '#1a7f37', '#57606a'];
const W = 760;
const PANEL_H = 220;
const M = { left: 64, right: 16, top: 28, bottom: 34 };

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1).replace(/\.0$/, '') : x.toFixed(2).replace(/\.?0+$/, ''));

/** Round-ish upper bound for an axis. */
function niceMax(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

/**
 * One panel.
 * @param {{ title: string, yLabel: string, xLabel: string, series: { name: string, points: [number, number][] }[], bands?: [number, number][], xMax: number }} p
 * @param {number} y0 vertical offset of the panel
 */
function panel(p, y0) {
  const innerW = W - M.left - M.right;
  const innerH = PANEL_H - M.top - M.bottom;
  const yMax = niceMax(Math.max(0, ...p.series.flatMap((s) => s.points.map((q) => q[1]))));
  const x = (v) => M.left + (v / p.xMax) * innerW;
  const y = (v) => y0 + M.top + innerH - (Math.min(v, yMax) / yMax) * innerH;
  const out = [`<text x="${M.left}" y="${y0 + 18}" font-size="13" font-weight="600">${esc(p.title)}</text>`];
  for (const [a, b] of p.bands ?? []) {
    out.push(`<rect x="${x(a).toFixed(1)}" y="${y0 + M.top}" width="${(x(b) - x(a)).toFixed(1)}" height="${innerH}" fill="#d1242f" fill-opacity="0.08"/>`);
  }
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#d0d7de" stroke-width="0.5"/>`);
    out.push(`<text x="${M.left - 6}" y="${(y(v) + 4).toFixed(1)}" font-size="10" text-anchor="end">${fmt(v)}</text>`);
  }
  for (let i = 0; i <= 6; i++) {
    const v = (p.xMax * i) / 6;
    out.push(`<text x="${x(v).toFixed(1)}" y="${y0 + PANEL_H - M.bottom + 14}" font-size="10" text-anchor="middle">${fmt(v)}</text>`);
  }
  out.push(`<text x="${M.left + innerW / 2}" y="${y0 + PANEL_H - 4}" font-size="10" text-anchor="middle">${esc(p.xLabel)}</text>`);
  out.push(`<text transform="translate(14 ${y0 + M.top + innerH / 2}) rotate(-90)" font-size="10" text-anchor="middle">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map(([a, b], k) => `${k === 0 ? 'M' : 'L'}${x(a).toFixed(1)} ${y(b).toFixed(1)}`).join('');
    out.push(`<path d="${d}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5"/>`);
  });
  return out.join('\n');
}

/**
 * A full SVG document: a title, a legend, and the panels stacked vertically.
 * @param {{ title: string, names: string[], panels: object[] }} c
 */
export function chart(c) {
  const legendH = 24;
  const h = 30 + legendH + c.panels.length * PANEL_H;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="system-ui, sans-serif">`,
    `<rect width="${W}" height="${h}" fill="#ffffff"/>`,
    `<text x="${M.left}" y="20" font-size="15" font-weight="700">${esc(c.title)}</text>`,
  ];
  c.names.forEach((name, i) => {
    const lx = M.left + i * 140;
    parts.push(`<rect x="${lx}" y="32" width="12" height="4" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${lx + 16}" y="38" font-size="11">${esc(name)}</text>`);
  });
  c.panels.forEach((p, i) => parts.push(panel(p, 30 + legendH + i * PANEL_H)));
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
