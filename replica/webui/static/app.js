// iggo console: the API client, the session, DOM helpers and formatting.
// No framework, no build step: every page's script is in pages.js and
// uses what this file puts on window.Iggo.
'use strict';

(function () {
  const body = document.body;
  const prefix = body.dataset.prefix || '/ui';
  const KEY = 'iggo.console.session';

  // The session is the API's identity answer: {user_id, token, expiry}
  // (expiry in unix seconds). It lives in this tab's session storage only.
  function session() {
    try {
      const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
      if (s && s.token && (!s.expiry || s.expiry * 1000 > Date.now())) return s;
    } catch (e) { /* a damaged entry is no session */ }
    return null;
  }
  function setSession(identity) {
    const t = identity.access_token || {};
    sessionStorage.setItem(KEY, JSON.stringify({ user_id: identity.user_id, token: t.token, expiry: t.expiry || 0, issued: Date.now() }));
  }

  // fresh renews the token (POST /users/refresh-token) once less than a
  // third of its lifetime is left, so a console left open does not fall
  // back to the login page every http.jwt.access_token_expiry. As in Iggy,
  // the old token stays valid until its own expiry. One renewal at a time.
  let renewing = null;
  async function fresh() {
    const s = session();
    if (!s || !s.expiry || !s.issued) return;
    const end = s.expiry * 1000, life = end - s.issued;
    if (life <= 0 || end - Date.now() > life / 3) return;
    if (!renewing) {
      renewing = fetch('/users/refresh-token', {
        method: 'POST', cache: 'no-store', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: s.token }),
      }).then(async res => {
        if (res.ok) setSession(await res.json());
      }).catch(() => { /* the current token is used until it expires */ }).finally(() => { renewing = null; });
    }
    await renewing;
  }
  function clearSession() { sessionStorage.removeItem(KEY); }

  function toLogin() {
    const next = location.pathname + location.search;
    location.assign(prefix + '/login?next=' + encodeURIComponent(next));
  }

  // APIError carries Iggy's error JSON: {id, code, reason, field}.
  class APIError extends Error {
    constructor(status, body, text) {
      const b = body || {};
      const reason = b.reason || text || ('HTTP ' + status);
      super(b.code ? reason + ' (' + b.code + (b.id !== undefined ? ', ' + b.id : '') + ')' : reason);
      this.status = status;
      this.body = b;
    }
  }

  // Ids and checksums are u64/u128 JSON numbers: quoted before parsing so
  // they keep every digit (JavaScript numbers hold 53 bits).
  function parseBig(text) {
    return JSON.parse(text.replace(/"(id|checksum)":(\d{16,})/g, '"$1":"$2"'));
  }

  // api calls the HTTP API with the session's token. opts.base is another
  // node's origin (cluster page); opts.quiet keeps a 401 from leaving the
  // page. Nothing is cached: every call goes to the node.
  async function api(method, path, payload, opts) {
    opts = opts || {};
    if (!opts.anonymous) await fresh();
    const s = session();
    if (!s && !opts.anonymous) {
      toLogin();
      throw new APIError(401, { reason: 'not logged in' });
    }
    const headers = {};
    if (s && !opts.anonymous) headers.Authorization = 'Bearer ' + s.token;
    const init = { method: method, headers: headers, cache: 'no-store' };
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(payload);
    }
    if (opts.signal) init.signal = opts.signal;
    let res;
    try {
      res = await fetch((opts.base || '') + path, init);
    } catch (e) {
      throw new APIError(0, { reason: 'cannot reach ' + (opts.base || 'the node') + ': ' + e.message });
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try { data = opts.big ? parseBig(text) : JSON.parse(text); } catch (e) { data = null; }
    }
    if (!res.ok) {
      if (res.status === 401 && !opts.quiet && !opts.anonymous && !opts.base) {
        clearSession();
        toLogin();
      }
      throw new APIError(res.status, data, text);
    }
    return data;
  }

  // el builds an element: el('td', {class: 'x', onclick: f}, 'text', child).
  // Text always goes in as text nodes, never as HTML.
  function el(tag, attrs) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === undefined || v === null || v === false) continue;
        if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else if (k === 'dataset') Object.assign(e.dataset, v);
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (let i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }
  function append(e, c) {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) { c.forEach(x => append(e, x)); return; }
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function $(sel) { return document.querySelector(sel); }

  // flash shows a message above the page: kind ok, error or info.
  let flashTimer = 0;
  function flash(msg, kind) {
    const f = $('#flash');
    if (!f) return;
    clear(f).appendChild(el('div', { class: 'msg ' + (kind || 'info') }, msg));
    clearTimeout(flashTimer);
    if (kind !== 'error') flashTimer = setTimeout(() => clear(f), 6000);
  }
  function fail(err) { flash(err && err.message ? err.message : String(err), 'error'); }

  // errorRow is a table row that says why a table is empty.
  function errorBox(err) { return el('div', { class: 'msg error' }, err.message || String(err)); }

  // confirm asks in a dialog of the page; it resolves true on Confirm.
  function confirmDialog(title, text, okLabel) {
    const m = $('#modal');
    $('#modal-title').textContent = title;
    $('#modal-text').textContent = text;
    const ok = $('#modal-ok');
    ok.textContent = okLabel || 'Confirm';
    m.hidden = false;
    return new Promise(resolve => {
      const done = v => {
        m.hidden = true;
        ok.removeEventListener('click', yes);
        $('#modal-cancel').removeEventListener('click', no);
        resolve(v);
      };
      const yes = () => done(true);
      const no = () => done(false);
      ok.addEventListener('click', yes);
      $('#modal-cancel').addEventListener('click', no);
      ok.focus();
    });
  }

  // --- formatting ---
  const units = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, PB: 1e15, EB: 1e18, KiB: 1024, MiB: 1048576, GiB: 1073741824, TiB: 1099511627776, PiB: 1125899906842624, EiB: 1152921504606846976 };
  // sizeBytes reads the API's size strings ("123 B", "4 KiB").
  function sizeBytes(s) {
    if (typeof s === 'number') return s;
    const m = /^([\d.]+)\s*([A-Za-z]+)$/.exec(String(s || '').trim());
    return m && units[m[2]] ? Number(m[1]) * units[m[2]] : 0;
  }
  function bytes(n) {
    n = sizeBytes(n);
    if (!isFinite(n)) return '—';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 2 : 1)) + ' ' + u[i];
  }
  function num(n) { return n === undefined || n === null ? '—' : Number(n).toLocaleString('en-US'); }
  function rate(n) {
    if (n === undefined || n === null || !isFinite(n)) return '—';
    if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M';
    if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k';
    return n.toFixed(n < 10 && n > 0 ? 1 : 0);
  }
  // time renders a µs timestamp.
  function time(us) {
    if (!us) return '—';
    const d = new Date(Number(us) / 1000);
    return isNaN(d) ? String(us) : d.toISOString().replace('T', ' ').replace('Z', ' UTC');
  }
  // duration renders µs as the largest whole units.
  function duration(us) {
    if (us === undefined || us === null) return '—';
    if (Number(us) >= 1.8e19) return 'never';
    let s = Math.floor(Number(us) / 1e6);
    if (s === 0) return Number(us) + ' µs';
    const parts = [];
    for (const [n, u] of [[86400, 'd'], [3600, 'h'], [60, 'm'], [1, 's']]) {
      if (s >= n) { parts.push(Math.floor(s / n) + u); s %= n; }
    }
    return parts.join(' ');
  }
  function maxSize(v) { return Number(v) >= 1.8e19 ? 'unlimited' : bytes(Number(v)); }

  // b64 decodes base64 to bytes.
  function b64(s) {
    if (!s) return new Uint8Array(0);
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function b64encode(bytesArr) {
    let s = '';
    for (let i = 0; i < bytesArr.length; i++) s += String.fromCharCode(bytesArr[i]);
    return btoa(s);
  }
  function utf8(s) { return new TextEncoder().encode(s); }
  function text(b) { return new TextDecoder('utf-8', { fatal: false }).decode(b); }
  function hex(b) {
    const out = [];
    for (let i = 0; i < b.length; i++) out.push(b[i].toString(16).padStart(2, '0'));
    return out.join(' ');
  }

  // link is a console path.
  function link(path) { return prefix + path; }
  function enc(v) { return encodeURIComponent(v); }

  // params reads and writes the page's query string.
  function params() { return new URLSearchParams(location.search); }
  function setParams(obj) {
    const p = new URLSearchParams();
    for (const k of Object.keys(obj)) if (obj[k] !== '' && obj[k] !== undefined && obj[k] !== null) p.set(k, obj[k]);
    history.replaceState(null, '', location.pathname + '?' + p.toString());
  }

  function formData(form) {
    const o = {};
    new FormData(form).forEach((v, k) => { o[k] = typeof v === 'string' ? v.trim() : v; });
    return o;
  }

  // busy disables a form's buttons while fn runs.
  async function busy(form, fn) {
    const buttons = form ? form.querySelectorAll('button') : [];
    buttons.forEach(b => { b.disabled = true; });
    try { return await fn(); } finally { buttons.forEach(b => { b.disabled = false; }); }
  }

  // The header: who is logged in, and logging out (the token is revoked
  // on every node through the metadata group).
  async function header() {
    const who = $('#whoami');
    const out = $('#logout');
    if (out) {
      out.addEventListener('click', async () => {
        try { await api('DELETE', '/users/logout', undefined, { quiet: true }); } catch (e) { /* the token goes anyway */ }
        clearSession();
        location.assign(prefix + '/login');
      });
    }
    if (who) {
      try {
        const me = await api('GET', '/users/me');
        who.textContent = me.username;
        window.Iggo.me = me;
      } catch (e) {
        who.textContent = '?';
      }
    }
  }

  // rendered records, once per page load, when the page first showed its
  // data: body data-rendered is the time in ms since the navigation began
  // (performance.now), taken after the frame with the data was painted
  // (two animation frames). The page-load benchmarks read it.
  function rendered() {
    if (body.dataset.rendered || body.dataset.rendering) return;
    body.dataset.rendering = 'true';
    requestAnimationFrame(() => requestAnimationFrame(() => {
      body.dataset.rendered = performance.now().toFixed(1);
      try { performance.mark('iggo:rendered'); } catch (e) { /* marks are optional */ }
    }));
  }

  window.Iggo = {
    prefix, session, setSession, clearSession, toLogin, api, APIError, el, clear, $, flash, fail, errorBox,
    confirm: confirmDialog, sizeBytes, bytes, num, rate, time, duration, maxSize, b64, b64encode, utf8, text, hex,
    link, enc, params, setParams, formData, busy, header, parseBig, rendered, me: null,
  };
})();
