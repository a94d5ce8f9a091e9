// iggo console: metric arithmetic (rates, histogram percentiles) and line
// charts drawn as SVG by hand. No external library, no network.
'use strict';

(function () {
  const NS = 'http://www.w3.org/2000/svg';

  // quantile is Prometheus's histogram_quantile over one interval: q in
  // [0, 1], bounds the finite upper bounds (ascending), counts the
  // cumulative observations at most each bound and total every
  // observation (+Inf included). Linear interpolation inside the bucket
  // holding the rank; a rank in the +Inf bucket answers the highest finite
  // bound. NaN when there is no observation.
  function quantile(q, bounds, counts, total) {
    if (!total || total <= 0 || !bounds.length) return NaN;
    const rank = q * total;
    for (let i = 0; i < bounds.length; i++) {
      if (counts[i] >= rank) {
        const lower = i === 0 ? 0 : bounds[i - 1];
        const below = i === 0 ? 0 : counts[i - 1];
        const inBucket = counts[i] - below;
        if (inBucket <= 0) return lower;
        return lower + (bounds[i] - lower) * (rank - below) / inBucket;
      }
    }
    return bounds[bounds.length - 1];
  }

  // delta is the histogram of what was observed between two summaries'
  // latency histograms (null when their bounds differ or the node
  // restarted: counters went down).
  function delta(prev, cur) {
    if (!prev || !cur || prev.bounds.length !== cur.bounds.length || cur.count < prev.count) return null;
    const counts = cur.counts.map((c, i) => c - prev.counts[i]);
    if (counts.some(c => c < 0)) return null;
    return { bounds: cur.bounds, counts: counts, count: cur.count - prev.count, sum: cur.sum - prev.sum };
  }

  // perSecond is the rate of a counter between two samples (ms apart);
  // null across a restart.
  function perSecond(prev, cur, ms) {
    if (prev === undefined || cur === undefined || ms <= 0 || cur < prev) return null;
    return (cur - prev) * 1000 / ms;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    return e;
  }

  // niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // LineChart keeps the last `points` samples of several series and draws
  // them into container as one SVG.
  class LineChart {
    constructor(container, series, opts) {
      this.el = container;
      this.series = series;
      this.opts = Object.assign({ points: 120, format: v => String(v), width: 560, height: 200 }, opts || {});
      this.samples = [];
    }
    push(t, values) {
      this.samples.push({ t: t, v: values });
      if (this.samples.length > this.opts.points) this.samples.shift();
      this.draw();
    }
    draw() {
      const W = this.opts.width, H = this.opts.height, L = 64, R = 10, T = 10, B = 24;
      const s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'linechart', role: 'img' });
      let max = 0;
      for (const p of this.samples) for (const v of p.v) if (v !== null && isFinite(v)) max = Math.max(max, v);
      max = niceMax(max);
      const n = this.opts.points;
      const x = i => L + (W - L - R) * i / (n - 1);
      const y = v => T + (H - T - B) * (1 - v / max);
      for (const f of [0, 0.5, 1]) {
        const yy = y(max * f);
        s.appendChild(svg('line', { x1: L, x2: W - R, y1: yy, y2: yy, class: 'gridline' }));
        const lab = svg('text', { x: L - 6, y: yy + 4, 'text-anchor': 'end', class: 'axis' });
        lab.textContent = this.opts.format(max * f);
        s.appendChild(lab);
      }
      const secs = svg('text', { x: L, y: H - 6, class: 'axis' });
      secs.textContent = '−' + (n - 1) + ' s';
      s.appendChild(secs);
      const now = svg('text', { x: W - R, y: H - 6, 'text-anchor': 'end', class: 'axis' });
      now.textContent = 'now';
      s.appendChild(now);
      const off = n - this.samples.length;
      this.series.forEach((ser, k) => {
        let d = '';
        let pen = false;
        this.samples.forEach((p, i) => {
          const v = p.v[k];
          if (v === null || !isFinite(v)) { pen = false; return; }
          d += (pen ? ' L' : ' M') + x(off + i).toFixed(1) + ' ' + y(v).toFixed(1);
          pen = true;
        });
        if (d) s.appendChild(svg('path', { d: d.trim(), class: 'series', stroke: ser.color, 'data-series': ser.name }));
      });
      const legend = document.createElement('div');
      legend.className = 'legend';
      const last = this.samples.length ? this.samples[this.samples.length - 1].v : [];
      this.series.forEach((ser, k) => {
        const item = document.createElement('span');
        const sw = document.createElement('i');
        sw.style.background = ser.color;
        item.appendChild(sw);
        const v = last[k];
        item.appendChild(document.createTextNode(ser.name + ' ' + (v === null || v === undefined || !isFinite(v) ? '—' : this.opts.format(v))));
        item.dataset.series = ser.name;
        legend.appendChild(item);
      });
      while (this.el.firstChild) this.el.removeChild(this.el.firstChild);
      this.el.appendChild(s);
      this.el.appendChild(legend);
    }
  }

  function seconds(v) {
    if (!isFinite(v)) return '—';
    if (v === 0) return '0';
    if (v < 1e-3) return (v * 1e6).toFixed(0) + ' µs';
    if (v < 1) return (v * 1e3).toFixed(v < 0.01 ? 2 : 1) + ' ms';
    return v.toFixed(2) + ' s';
  }

  window.IggoCharts = { quantile, delta, perSecond, LineChart, niceMax, seconds };
})();
