// iggo console: one function per page (body data-page). Each page fetches
// what it shows from the HTTP API with the session's token, so the API's
// permissions decide what appears, and renders it with Iggo.el (text
// nodes only). Errors show the API's own message.
'use strict';

(function () {
  const I = window.Iggo;
  const C = window.IggoCharts;
  const { el, $, api, enc, link } = I;
  const body = document.body;

  function td() { return el.apply(null, ['td', null].concat(Array.from(arguments))); }
  function button(label, cls, onclick, attrs) {
    return el('button', Object.assign({ type: 'button', class: cls || 'ghost', onclick: onclick }, attrs || {}), label);
  }
  function fill(tbody, rows) {
    I.clear(tbody);
    const frag = document.createDocumentFragment();
    rows.forEach(r => frag.appendChild(r));
    tbody.appendChild(frag);
  }
  function emptyRow(cols, msg, cls) {
    return el('tr', { class: cls || 'empty' }, el('td', { colspan: cols }, msg));
  }
  function card(label, value) {
    return el('div', { class: 'stat' }, el('span', { class: 'label' }, label), el('span', { class: 'value' }, value));
  }
  function stamp(sel) {
    const u = $(sel);
    if (u) u.textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
  }
  // action runs an API change from a button or form and reports it.
  async function action(form, fn, okMsg, then) {
    try {
      await I.busy(form, fn);
      if (okMsg) I.flash(okMsg, 'ok');
      if (then) await then();
    } catch (e) {
      I.fail(e);
    }
  }
  function onSubmit(sel, fn) {
    const f = $(sel);
    if (f) f.addEventListener('submit', ev => { ev.preventDefault(); fn(f, I.formData(f)); });
  }

  // pager renders "a–b of n" with previous and next buttons.
  function pager(container, page, size, total, go) {
    I.clear(container);
    if (total <= size) return;
    const pages = Math.ceil(total / size);
    container.appendChild(button('◀', 'ghost', () => go(page - 1), { disabled: page === 0 || undefined, 'data-dir': 'prev' }));
    container.appendChild(el('span', null, (page * size + 1) + '–' + Math.min(total, (page + 1) * size) + ' of ' + I.num(total)));
    container.appendChild(button('▶', 'ghost', () => go(page + 1), { disabled: page >= pages - 1 || undefined, 'data-dir': 'next' }));
  }

  // streamTopicLists fills datalists with the streams the user may list
  // and, when the stream input changes, that stream's topics.
  function streamTopicLists(streamInput, topicInput, streamsList, topicsList) {
    api('GET', '/streams', undefined, { quiet: true }).then(list => {
      fill(streamsList, list.map(s => el('option', { value: s.name }, '#' + s.id)));
    }).catch(() => { /* not allowed to list: typing still works */ });
    const topics = () => {
      const s = streamInput.value.trim();
      if (!s) return;
      api('GET', '/streams/' + enc(s) + '/topics', undefined, { quiet: true }).then(list => {
        fill(topicsList, list.map(t => el('option', { value: t.name }, '#' + t.id + ', ' + t.partitions_count + ' partitions')));
      }).catch(() => I.clear(topicsList));
    };
    streamInput.addEventListener('change', topics);
    topics();
  }

  const pages = {};

  // ---------------------------------------------------------------- login
  pages.login = function () {
    const next = I.params().get('next');
    const go = () => location.assign(next && next.startsWith(I.prefix) ? next : link('/'));
    onSubmit('#login-form', (f, d) => action(f, async () => {
      const id = await api('POST', '/users/login', { username: d.username, password: d.password }, { anonymous: true });
      I.setSession(id);
      go();
    }));
    onSubmit('#pat-form', (f, d) => action(f, async () => {
      const id = await api('POST', '/personal-access-tokens/login', { token: d.token }, { anonymous: true });
      I.setSession(id);
      go();
    }));
    $('#login-username').focus();
  };

  // -------------------------------------------------------------- cluster
  pages.cluster = function () {
    const prev = {};
    const tbody = $('#nodes tbody');
    function origin(n) {
      if (!n.endpoints || !n.endpoints.http) return null;
      const host = n.ip.includes(':') ? '[' + n.ip + ']' : n.ip;
      const hostPort = host + ':' + n.endpoints.http;
      return hostPort === location.host ? '' : location.protocol + '//' + hostPort;
    }
    function addr(ip, port) { return port ? (ip.includes(':') ? '[' + ip + ']' : ip) + ':' + port : '—'; }
    async function nodeFigures(n) {
      const base = origin(n);
      if (base === null) return { error: 'no HTTP port' };
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(), 1500);
      try {
        const s = await api('GET', '/ui/api/summary', undefined, { base: base, quiet: true, signal: ctl.signal });
        return { summary: s };
      } catch (e) {
        return { error: e.message };
      } finally {
        clearTimeout(timer);
      }
    }
    async function refresh() {
      let meta;
      try {
        meta = await api('GET', '/cluster/metadata');
      } catch (e) {
        fill(tbody, [emptyRow(13, e.message, 'error')]);
        return;
      }
      $('#cluster-name').textContent = meta.name || '';
      const figures = await Promise.all(meta.nodes.map(nodeFigures));
      const leader = meta.nodes.find(n => n.role === 'leader');
      const healthy = meta.nodes.filter(n => n.status === 'healthy').length;
      const cards = $('#cluster-cards');
      I.clear(cards);
      cards.appendChild(card('Metadata leader', leader ? leader.name : 'none (election in progress)'));
      cards.appendChild(card('Nodes healthy', healthy + ' of ' + meta.nodes.length));
      let connTotal = 0, inTotal = 0;
      const rows = meta.nodes.map((n, i) => {
        const f = figures[i];
        const s = f.summary;
        let rin = null, rout = null, bin = null, bout = null, conns = '—';
        if (s) {
          const p = prev[n.name];
          if (p) {
            const ms = s.time_ms - p.time_ms;
            rin = C.perSecond(p.messages_in, s.messages_in, ms);
            rout = C.perSecond(p.messages_out, s.messages_out, ms);
            bin = C.perSecond(p.bytes_in, s.bytes_in, ms);
            bout = C.perSecond(p.bytes_out, s.bytes_out, ms);
          }
          prev[n.name] = s;
          const c = Object.values(s.connections || {}).reduce((a, b) => a + b, 0);
          connTotal += c;
          inTotal += rin || 0;
          conns = Object.keys(s.connections || {}).filter(k => s.connections[k]).map(k => k + ' ' + s.connections[k]).join(', ') || '0';
        }
        const health = el('span', { class: 'badge ' + (n.status === 'healthy' ? 'ok' : 'bad') }, n.status);
        // A node whose figures could not be read: why, on hover.
        const unknown = () => f.error ? el('span', { class: 'muted', title: f.error }, 'n/a') : '…';
        return el('tr', { dataset: { node: n.name, status: n.status, role: n.role } },
          td(el('strong', null, n.name)),
          td(n.role === 'leader' ? el('span', { class: 'badge lead' }, 'leader') : n.role),
          td(health),
          td(addr(n.ip, n.endpoints.tcp)), td(addr(n.ip, n.endpoints.quic)), td(addr(n.ip, n.endpoints.http)), td(addr(n.ip, n.endpoints.websocket)),
          td(s ? s.version : unknown()),
          td(s ? I.rate(rin) : unknown()), td(s ? I.rate(rout) : unknown()),
          td(s ? (bin === null ? '—' : I.bytes(bin) + '/s') : unknown()), td(s ? (bout === null ? '—' : I.bytes(bout) + '/s') : unknown()),
          td(s ? conns : unknown()));
      });
      fill(tbody, rows);
      cards.appendChild(card('Messages in/s (all nodes)', I.rate(inTotal)));
      cards.appendChild(card('Connections (all nodes)', I.num(connTotal)));
      stamp('#updated');
      I.rendered();
    }
    async function stats() {
      const box = $('#stats');
      try {
        const s = await api('GET', '/stats');
        I.clear(box).appendChild(el('div', { class: 'cards' },
          card('Version', s.iggy_server_version), card('Host', s.hostname), card('Up', I.duration(s.run_time)),
          card('Streams', I.num(s.streams_count)), card('Topics', I.num(s.topics_count)), card('Partitions', I.num(s.partitions_count)),
          card('Segments', I.num(s.segments_count)), card('Messages', I.num(s.messages_count)), card('Stored', I.bytes(s.messages_size_bytes)),
          card('Clients', I.num(s.clients_count)), card('Consumer groups', I.num(s.consumer_groups_count)),
          card('Memory', I.bytes(s.memory_usage) + ' of ' + I.bytes(s.total_memory)), card('CPU', (s.cpu_usage || 0).toFixed(1) + ' %'),
          card('Disk free', I.bytes(s.free_disk_space) + ' of ' + I.bytes(s.total_disk_space)), card('OS', s.os_name + ' ' + s.os_version)));
      } catch (e) {
        I.clear(box).appendChild(I.errorBox(e));
      }
    }
    refresh();
    stats();
    setInterval(refresh, 2000);
    setInterval(stats, 10000);
  };

  // -------------------------------------------------------------- streams
  function streamRow(s, reload) {
    return el('tr', { dataset: { stream: s.id } },
      td(s.id), td(el('a', { href: link('/streams/' + s.id) }, s.name)), td(I.num(s.topics_count)), td(I.num(s.messages_count)),
      td(I.bytes(s.size)), td(I.time(s.created_at)),
      td(el('span', { class: 'row-actions' },
        button('Purge', 'warn', () => purgeStream(s, reload)),
        button('Delete', 'danger', () => deleteStream(s, reload)))));
  }
  async function purgeStream(s, then) {
    if (!await I.confirm('Purge stream ' + s.name + '?', 'Every message of every topic in stream ' + s.name + ' is deleted. The topics stay.', 'Purge')) return;
    await action(null, () => api('DELETE', '/streams/' + s.id + '/purge'), 'Stream ' + s.name + ' purged', then);
  }
  async function deleteStream(s, then) {
    if (!await I.confirm('Delete stream ' + s.name + '?', 'The stream, its ' + s.topics_count + ' topics and all their messages are deleted.', 'Delete')) return;
    await action(null, () => api('DELETE', '/streams/' + s.id), 'Stream ' + s.name + ' deleted', then);
  }

  pages.streams = function () {
    const tbody = $('#streams tbody');
    const note = $('#streams-note');
    async function load() {
      I.clear(note);
      try {
        const list = await api('GET', '/streams');
        fill(tbody, list.length ? list.map(s => streamRow(s, load)) : [emptyRow(7, 'No streams yet.')]);
        I.rendered();
      } catch (e) {
        if (e.status !== 403) {
          fill(tbody, [emptyRow(7, e.message, 'error')]);
          return;
        }
        // Not allowed to list every stream: show the ones the user's own
        // permissions name, each as the API answers it.
        note.appendChild(el('div', { class: 'msg info' }, 'Listing all streams: ' + e.message + '. Shown: the streams your permissions name.'));
        let ids = [];
        try {
          const me = await api('GET', '/users/me');
          ids = Object.keys((me.permissions && me.permissions.streams) || {});
        } catch (e2) { /* nothing to show */ }
        const got = await Promise.allSettled(ids.map(id => api('GET', '/streams/' + enc(id), undefined, { quiet: true })));
        const rows = got.filter(r => r.status === 'fulfilled').map(r => streamRow(r.value, load));
        fill(tbody, rows.length ? rows : [emptyRow(7, 'No stream you may read.')]);
      }
    }
    $('#refresh').addEventListener('click', load);
    onSubmit('#create-stream', (f, d) => action(f, () => api('POST', '/streams', { name: d.name }), 'Stream ' + d.name + ' created', () => { f.reset(); return load(); }));
    load();
  };

  // --------------------------------------------------------------- stream
  function optValue(t, key) { return t.options && t.options[key] ? t.options[key].value : '—'; }

  pages.stream = function () {
    const sid = body.dataset.stream;
    let stream = null;
    const tbody = $('#topics tbody');
    async function load() {
      try {
        stream = await api('GET', '/streams/' + enc(sid));
      } catch (e) {
        fill(tbody, [emptyRow(11, e.message, 'error')]);
        return;
      }
      $('#stream-title').textContent = stream.name + ' (#' + stream.id + ')';
      $('#crumb-stream').textContent = stream.name;
      const cards = I.clear($('#stream-cards'));
      [card('ID', stream.id), card('Topics', I.num(stream.topics_count)), card('Messages', I.num(stream.messages_count)),
        card('Size', I.bytes(stream.size)), card('Created', I.time(stream.created_at))].forEach(c => cards.appendChild(c));
      const base = '/streams/' + stream.id + '/topics/';
      fill(tbody, stream.topics.length ? stream.topics.map(t => el('tr', { dataset: { topic: t.id } },
        td(t.id), td(el('a', { href: link(base + t.id) }, t.name)), td(I.num(t.partitions_count)), td(I.num(t.messages_count)),
        td(I.bytes(t.size)), td(optValue(t, 'durability')), td(optValue(t, 'consumer_offset_durability')),
        td(I.duration(t.message_expiry)), td(I.maxSize(t.max_topic_size)), td(t.compression_algorithm),
        td(el('span', { class: 'row-actions' },
          el('a', { class: 'button ghost', href: link('/messages?stream=' + stream.id + '&topic=' + t.id + '&partition=0&kind=last') }, 'Browse'),
          button('Purge', 'warn', async () => {
            if (!await I.confirm('Purge topic ' + t.name + '?', 'All ' + I.num(t.messages_count) + ' messages of topic ' + t.name + ' are deleted.', 'Purge')) return;
            await action(null, () => api('DELETE', base + t.id + '/purge'), 'Topic ' + t.name + ' purged', load);
          }),
          button('Delete', 'danger', async () => {
            if (!await I.confirm('Delete topic ' + t.name + '?', 'The topic, its ' + t.partitions_count + ' partitions and their messages are deleted.', 'Delete')) return;
            await action(null, () => api('DELETE', base + t.id), 'Topic ' + t.name + ' deleted', load);
          }))))) : [emptyRow(11, 'No topics yet.')]);
      I.rendered();
    }
    $('#refresh').addEventListener('click', load);
    onSubmit('#create-topic', (f, d) => {
      const options = {};
      for (const k of ['durability', 'consumer_offset_durability', 'segment_size']) if (d[k]) options[k] = d[k];
      const req = {
        name: d.name, partitions_count: Number(d.partitions_count), compression_algorithm: d.compression_algorithm,
        message_expiry: d.message_expiry || 0, max_topic_size: d.max_topic_size || 0, options: options,
      };
      action(f, () => api('POST', '/streams/' + enc(stream ? stream.id : sid) + '/topics', req), 'Topic ' + d.name + ' created', () => { f.reset(); return load(); });
    });
    onSubmit('#rename-stream', (f, d) => action(f, () => api('PUT', '/streams/' + stream.id, { name: d.name }), 'Stream renamed to ' + d.name, () => { f.reset(); return load(); }));
    $('#purge-stream').addEventListener('click', () => stream && purgeStream(stream, load));
    $('#delete-stream').addEventListener('click', () => stream && deleteStream(stream, () => location.assign(link('/streams'))));
    load();
  };

  // ---------------------------------------------------------------- topic
  pages.topic = function () {
    const sid = body.dataset.stream, tid = body.dataset.topic;
    const PAGE = 100;
    let topic = null, page = 0;
    const path = () => '/streams/' + enc(sid) + '/topics/' + enc(topic ? topic.id : tid);
    function partitions() {
      const ps = topic.partitions;
      const rows = ps.slice(page * PAGE, (page + 1) * PAGE).map(p => el('tr', { dataset: { partition: p.id } },
        td(p.id), td(I.num(p.current_offset)), td(I.num(p.messages_count)), td(I.bytes(p.size)), td(I.num(p.segments_count)), td(I.time(p.created_at)),
        td(el('a', { class: 'button ghost', href: link('/messages?stream=' + enc(sid) + '&topic=' + topic.id + '&partition=' + p.id + '&kind=last') }, 'Browse'))));
      fill($('#partitions tbody'), rows.length ? rows : [emptyRow(7, 'No partitions.')]);
      pager($('#partitions-pager'), page, PAGE, ps.length, p => { page = p; partitions(); });
    }
    async function load() {
      try {
        topic = await api('GET', '/streams/' + enc(sid) + '/topics/' + enc(tid));
      } catch (e) {
        fill($('#partitions tbody'), [emptyRow(7, e.message, 'error')]);
        return;
      }
      api('GET', '/streams/' + enc(sid), undefined, { quiet: true }).then(st => { $('#crumb-stream').textContent = st.name; }).catch(() => { /* the id stays */ });
      $('#topic-title').textContent = topic.name + ' (#' + topic.id + ')';
      $('#crumb-topic').textContent = topic.name;
      $('#groups-link').setAttribute('href', link('/groups?stream=' + enc(sid) + '&topic=' + topic.id));
      const cards = I.clear($('#topic-cards'));
      [card('ID', topic.id), card('Partitions', I.num(topic.partitions_count)), card('Messages', I.num(topic.messages_count)),
        card('Size', I.bytes(topic.size)), card('Retention', I.duration(topic.message_expiry)), card('Max size', I.maxSize(topic.max_topic_size)),
        card('Durability', optValue(topic, 'durability')), card('Offsets durability', optValue(topic, 'consumer_offset_durability')),
        card('Compression', topic.compression_algorithm), card('Created', I.time(topic.created_at))].forEach(c => cards.appendChild(c));
      const keys = Object.keys(topic.options || {}).sort();
      fill($('#options tbody'), keys.map(k => el('tr', null, td(k), td(topic.options[k].value), td(topic.options[k].explicit ? 'set' : 'default'))));
      page = Math.min(page, Math.max(0, Math.ceil(topic.partitions.length / PAGE) - 1));
      partitions();
      I.rendered();
      const f = $('#update-topic');
      f.elements.name.value = topic.name;
      f.elements.compression_algorithm.value = topic.compression_algorithm;
    }
    $('#refresh').addEventListener('click', load);
    onSubmit('#update-topic', (f, d) => {
      const req = { name: d.name, compression_algorithm: d.compression_algorithm };
      if (d.message_expiry) req.message_expiry = d.message_expiry;
      if (d.max_topic_size) req.max_topic_size = d.max_topic_size;
      action(f, () => api('PUT', path(), req), 'Topic updated', load);
    });
    onSubmit('#add-partitions', (f, d) => action(f, () => api('POST', path() + '/partitions', { partitions_count: Number(d.count) }), d.count + ' partitions added', load));
    onSubmit('#delete-partitions', async (f, d) => {
      if (!await I.confirm('Delete ' + d.count + ' partitions?', 'The last ' + d.count + ' partitions of ' + topic.name + ' and their messages are deleted.', 'Delete')) return;
      action(f, () => api('DELETE', path() + '/partitions?partitions_count=' + enc(d.count)), d.count + ' partitions deleted', load);
    });
    onSubmit('#delete-segments', async (f, d) => {
      if (!await I.confirm('Delete segments?', 'The ' + d.count + ' oldest segments of partition ' + d.partition + ' and their messages are deleted.', 'Delete')) return;
      action(f, () => api('DELETE', path() + '/partitions/' + enc(d.partition) + '?segments_count=' + enc(d.count)), 'Segments deleted', load);
    });
    $('#purge-topic').addEventListener('click', async () => {
      if (!topic || !await I.confirm('Purge topic ' + topic.name + '?', 'All ' + I.num(topic.messages_count) + ' messages are deleted; the partitions stay.', 'Purge')) return;
      action(null, () => api('DELETE', path() + '/purge'), 'Topic purged', load);
    });
    $('#delete-topic').addEventListener('click', async () => {
      if (!topic || !await I.confirm('Delete topic ' + topic.name + '?', 'The topic, its partitions and messages are deleted.', 'Delete')) return;
      action(null, () => api('DELETE', path()), 'Topic deleted', () => location.assign(link('/streams/' + enc(sid))));
    });
    load();
  };

  // ------------------------------------------------------------- messages
  // headerValue renders one user header field by its kind.
  function headerValue(f) {
    const b = I.b64(f.value);
    const dv = new DataView(b.buffer);
    try {
      switch (f.kind) {
        case 'string': return I.text(b);
        case 'bool': return b[0] ? 'true' : 'false';
        case 'int8': return String(dv.getInt8(0));
        case 'uint8': return String(dv.getUint8(0));
        case 'int16': return String(dv.getInt16(0, true));
        case 'uint16': return String(dv.getUint16(0, true));
        case 'int32': return String(dv.getInt32(0, true));
        case 'uint32': return String(dv.getUint32(0, true));
        case 'int64': return String(dv.getBigInt64(0, true));
        case 'uint64': return String(dv.getBigUint64(0, true));
        case 'float32': return String(dv.getFloat32(0, true));
        case 'float64': return String(dv.getFloat64(0, true));
      }
    } catch (e) { /* short value: shown as hex */ }
    return '0x' + I.hex(b).replace(/ /g, '');
  }
  const PAYLOAD_SHOWN = 4096;
  // payloadView renders a payload as text, pretty JSON or hex.
  function payloadView(b, format) {
    const cut = b.length > PAYLOAD_SHOWN ? b.subarray(0, PAYLOAD_SHOWN) : b;
    let out;
    if (format === 'hex') {
      out = I.hex(cut);
    } else if (format === 'json') {
      try { out = JSON.stringify(JSON.parse(I.text(b)), null, 2); } catch (e) { out = '(not JSON: ' + e.message + ')\n' + I.text(cut); }
    } else {
      out = I.text(cut);
    }
    const pre = el('pre', { class: 'payload' }, out);
    if (b.length > PAYLOAD_SHOWN && format !== 'json') return [pre, el('div', { class: 'muted' }, I.num(b.length) + ' bytes; the first ' + PAYLOAD_SHOWN + ' shown')];
    return pre;
  }

  pages.messages = function () {
    const f = $('#poll-form');
    const E = f.elements;
    const q = I.params();
    for (const k of ['stream', 'topic', 'partition', 'kind', 'value', 'count', 'consumer', 'format']) if (q.get(k) !== null) E[k].value = q.get(k);
    streamTopicLists(E.stream, E.topic, $('#m-streams'), $('#m-topics'));
    let result = null, asked = null;
    const valueLabel = () => {
      const k = E.kind.value;
      $('#m-value-label').firstChild.textContent = k === 'timestamp' ? 'Timestamp (µs or a date) ' : 'Offset ';
      E.value.disabled = k !== 'offset' && k !== 'timestamp';
      E.consumer.disabled = k !== 'next';
    };
    E.kind.addEventListener('change', valueLabel);
    valueLabel();
    function render() {
      const tbody = $('#m-table tbody');
      if (!result) return;
      const fmt = E.format.value;
      const msgs = result.messages;
      fill(tbody, msgs.length ? msgs.map(m => el('tr', { dataset: { offset: m.header.offset } },
        td(I.num(m.header.offset)), td(I.time(m.header.timestamp)), td(el('code', null, String(m.header.id))),
        td(Array.isArray(m.user_headers) && m.user_headers.length
          ? el('ul', { class: 'headers' }, m.user_headers.map(h => el('li', null, el('b', null, headerValue(h.key)), ' = ', headerValue(h.value), el('span', { class: 'muted' }, ' ' + h.value.kind))))
          : (typeof m.user_headers === 'string' ? el('code', null, m.user_headers) : el('span', { class: 'muted' }, 'none'))),
        td(payloadView(I.b64(m.payload), fmt)))) : [emptyRow(5, 'No messages there.')]);
      const first = msgs.length ? msgs[0].header.offset : null;
      const last = msgs.length ? msgs[msgs.length - 1].header.offset : null;
      $('#m-heading').textContent = 'Partition ' + result.partition_id + (msgs.length ? ': offsets ' + I.num(first) + '–' + I.num(last) : '');
      $('#m-info').textContent = 'Current offset of the partition: ' + I.num(result.current_offset) + '. ' + msgs.length + ' message' + (msgs.length === 1 ? '' : 's') + ' shown (asked for ' + asked.count + ' from ' + asked.kind + (asked.kind === 'offset' || asked.kind === 'timestamp' ? ' ' + asked.value : '') + ').';
      $('#m-older').disabled = !(msgs.length && first > 0);
      $('#m-newer').disabled = !(msgs.length ? last < result.current_offset : asked.kind === 'offset' && Number(asked.value) <= result.current_offset);
      I.rendered();
    }
    function timestampValue(v) {
      if (/^\d+$/.test(v)) return v;
      const t = Date.parse(v);
      if (isNaN(t)) throw new Error('timestamp: give microseconds since the epoch or a date such as 2025-01-31T12:00:00Z');
      return String(t * 1000);
    }
    async function poll(kind, value) {
      const s = E.stream.value.trim(), t = E.topic.value.trim();
      if (!s || !t) return;
      kind = kind || E.kind.value;
      value = value === undefined ? E.value.value.trim() : String(value);
      try {
        if (kind === 'timestamp') value = timestampValue(value);
      } catch (e) { I.fail(e); return; }
      const count = E.count.value;
      const qs = new URLSearchParams({ consumer_id: E.consumer.value.trim() || '1', partition_id: E.partition.value, kind: kind, count: count, auto_commit: 'false' });
      if (kind === 'offset' || kind === 'timestamp') qs.set('value', value || '0');
      I.setParams({ stream: s, topic: t, partition: E.partition.value, kind: kind, value: qs.get('value') || '', count: count, format: E.format.value, consumer: kind === 'next' ? E.consumer.value : '' });
      try {
        const r = await I.busy(f, () => api('GET', '/streams/' + enc(s) + '/topics/' + enc(t) + '/messages?' + qs.toString(), undefined, { big: true }));
        result = r;
        asked = { kind: kind, value: value, count: Number(count) };
        render();
      } catch (e) {
        result = null;
        fill($('#m-table tbody'), [emptyRow(5, e.message, 'error')]);
        $('#m-info').textContent = '';
        $('#m-older').disabled = $('#m-newer').disabled = true;
      }
    }
    f.addEventListener('submit', ev => { ev.preventDefault(); poll(); });
    E.format.addEventListener('change', () => { render(); });
    $('#m-older').addEventListener('click', () => {
      const first = result.messages[0].header.offset;
      const to = Math.max(0, first - Number(E.count.value));
      E.kind.value = 'offset'; E.value.value = to; valueLabel();
      poll('offset', to);
    });
    $('#m-newer').addEventListener('click', () => {
      const msgs = result.messages;
      const from = msgs.length ? msgs[msgs.length - 1].header.offset + 1 : Number(asked.value);
      E.kind.value = 'offset'; E.value.value = from; valueLabel();
      poll('offset', from);
    });
    const sf = $('#send-form');
    sf.addEventListener('submit', ev => {
      ev.preventDefault();
      const d = I.formData(sf);
      const s = E.stream.value.trim(), t = E.topic.value.trim();
      if (!s || !t) { I.fail('Choose a stream and a topic above first.'); return; }
      let part;
      if (d.partitioning === 'partition_id') {
        const b = new Uint8Array(4);
        new DataView(b.buffer).setUint32(0, Number(E.partition.value), true);
        part = { kind: 'partition_id', value: I.b64encode(b) };
      } else if (d.partitioning === 'messages_key') {
        if (!d.key) { I.fail('Sending by key needs a key.'); return; }
        part = { kind: 'messages_key', value: I.b64encode(I.utf8(d.key)) };
      } else {
        part = { kind: 'balanced', value: '' };
      }
      const headers = [];
      for (const line of (sf.elements.headers.value || '').split('\n')) {
        const i = line.indexOf('=');
        if (!line.trim()) continue;
        if (i <= 0) { I.fail('Headers: write key=value, one a line.'); return; }
        headers.push({ key: { kind: 'string', value: I.b64encode(I.utf8(line.slice(0, i).trim())) }, value: { kind: 'string', value: I.b64encode(I.utf8(line.slice(i + 1).trim())) } });
      }
      const msg = { payload: I.b64encode(I.utf8(sf.elements.payload.value)), user_headers: headers.length ? headers : null };
      if (d.id) msg.id = /^\d+$/.test(d.id) ? d.id : d.id;
      action(sf, async () => {
        const r = await api('POST', '/streams/' + enc(s) + '/topics/' + enc(t) + '/messages', { partitioning: part, messages: [msg] });
        const c = r && r.confirmations && r.confirmations[0];
        I.flash(c ? 'Sent: partition ' + c.partition_id + ', offset ' + I.num(c.base_offset) : 'Sent', 'ok');
        if (c) E.partition.value = c.partition_id;
        E.kind.value = 'last'; valueLabel();
        sf.elements.payload.value = '';
        await poll('last');
      });
    });
    if (E.stream.value && E.topic.value) poll();
  };

  // --------------------------------------------------------------- groups
  pages.groups = function () {
    const f = $('#groups-form');
    const E = f.elements;
    const q = I.params();
    if (q.get('stream')) E.stream.value = q.get('stream');
    if (q.get('topic')) E.topic.value = q.get('topic');
    streamTopicLists(E.stream, E.topic, $('#g-streams'), $('#g-topics'));
    const PAGE = 100;
    let group = q.get('group'), page = 0, timer = 0;
    const base = () => '/streams/' + enc(E.stream.value.trim()) + '/topics/' + enc(E.topic.value.trim());
    async function groups() {
      $('#groups-card').hidden = false;
      I.setParams({ stream: E.stream.value.trim(), topic: E.topic.value.trim(), group: group || '' });
      const tbody = $('#groups tbody');
      try {
        const list = await api('GET', base() + '/consumer-groups');
        fill(tbody, list.length ? list.map(g => el('tr', { dataset: { group: g.id } },
          td(g.id), td(g.name), td(I.num(g.members_count)), td(I.num(g.partitions_count)),
          td(el('span', { class: 'row-actions' },
            button('Open', 'ghost', () => { group = String(g.id); page = 0; groups(); openGroup(); }),
            button('Delete', 'danger', async () => {
              if (!await I.confirm('Delete consumer group ' + g.name + '?', 'Its members are removed and its committed offsets deleted.', 'Delete')) return;
              await action(null, () => api('DELETE', base() + '/consumer-groups/' + g.id), 'Group ' + g.name + ' deleted', () => {
                if (group === String(g.id)) { group = null; $('#group-card').hidden = true; clearInterval(timer); }
                return groups();
              });
            }))))) : [emptyRow(5, 'No consumer groups on this topic.')]);
      } catch (e) {
        fill(tbody, [emptyRow(5, e.message, 'error')]);
      }
    }
    async function lag() {
      if (!group) return;
      const card = $('#group-card');
      card.hidden = false;
      let g, topic;
      try {
        [g, topic] = await Promise.all([api('GET', base() + '/consumer-groups/' + enc(group)), api('GET', base())]);
      } catch (e) {
        fill($('#members tbody'), [emptyRow(2, e.message, 'error')]);
        fill($('#lag tbody'), []);
        return;
      }
      $('#group-title').textContent = 'Group ' + g.name + ' (#' + g.id + ')';
      const owner = {};
      g.members.forEach(m => m.partitions.forEach(p => { owner[p] = m.id; }));
      fill($('#members tbody'), g.members.length ? g.members.map(m => el('tr', { dataset: { member: m.id } }, td(m.id), td(m.partitions.join(', ') || '—'))) : [emptyRow(2, 'No members joined.')]);
      const parts = topic.partitions.slice(page * PAGE, (page + 1) * PAGE);
      let offsets = {};
      if (parts.length) {
        const from = parts[0].id, count = parts[parts.length - 1].id - from + 1;
        try {
          const r = await api('GET', '/ui/api/group-offsets?stream=' + enc(E.stream.value.trim()) + '&topic=' + enc(E.topic.value.trim()) + '&group=' + g.id + '&from=' + from + '&count=' + Math.min(count, PAGE));
          r.partitions.forEach(o => { offsets[o.partition_id] = o; });
        } catch (e) {
          fill($('#lag tbody'), [emptyRow(5, e.message, 'error')]);
          return;
        }
      }
      fill($('#lag tbody'), parts.map(p => {
        const o = offsets[p.id];
        const stored = o && o.stored_offset !== null ? o.stored_offset : null;
        const lagv = stored === null ? p.messages_count : Math.max(0, p.current_offset - stored);
        return el('tr', { dataset: { partition: p.id, lag: lagv } },
          td(p.id), td(owner[p.id] !== undefined ? owner[p.id] : '—'), td(I.num(p.current_offset)),
          td(stored === null ? el('span', { class: 'muted' }, 'none') : I.num(stored)), td(el('strong', { class: lagv ? 'lagging' : '' }, I.num(lagv))));
      }));
      pager($('#lag-pager'), page, PAGE, topic.partitions.length, p => { page = p; lag(); });
      stamp('#group-updated');
      I.rendered();
    }
    function openGroup() {
      clearInterval(timer);
      lag();
      timer = setInterval(lag, 3000);
    }
    f.addEventListener('submit', ev => { ev.preventDefault(); group = null; $('#group-card').hidden = true; clearInterval(timer); groups(); });
    $('#refresh').addEventListener('click', () => { groups(); lag(); });
    onSubmit('#create-group', (cf, d) => action(cf, () => api('POST', base() + '/consumer-groups', { name: d.name }), 'Group ' + d.name + ' created', () => { cf.reset(); return groups(); }));
    if (E.stream.value && E.topic.value) {
      groups();
      if (group) openGroup();
    }
  };

  // ---------------------------------------------------------------- users
  const GLOBAL = ['manage_servers', 'read_servers', 'manage_users', 'read_users', 'manage_streams', 'read_streams', 'manage_topics', 'read_topics', 'poll_messages', 'send_messages'];
  function checks(container, prefix, global) {
    fill(container, GLOBAL.map(k => el('label', { class: 'check' }, el('input', { type: 'checkbox', name: prefix + k, checked: global && global[k] ? true : undefined }), k.replace('_', ' '))));
  }
  function readChecks(form, prefix) {
    const g = {};
    GLOBAL.forEach(k => { g[k] = !!form.elements[prefix + k].checked; });
    return g;
  }
  function permSummary(p) {
    if (!p) return el('span', { class: 'muted' }, 'no permissions');
    const on = GLOBAL.filter(k => p.global[k]);
    const streams = Object.keys(p.streams || {});
    return el('div', null,
      el('div', null, el('b', null, 'Global: '), on.length ? on.join(', ') : 'none'),
      streams.length ? el('div', null, el('b', null, 'Streams: '), streams.map(s => {
        const sp = p.streams[s];
        const flags = Object.keys(sp).filter(k => sp[k] === true);
        return '#' + s + ' (' + (flags.join(', ') || 'none') + (sp.topics ? '; topics ' + Object.keys(sp.topics).join(', ') : '') + ')';
      }).join('; ')) : null);
  }

  pages.users = function () {
    let current = null;
    async function me() {
      try {
        const u = await api('GET', '/users/me');
        I.clear($('#me')).appendChild(el('div', null,
          el('div', { class: 'cards' }, card('Username', u.username), card('ID', u.id), card('Status', u.status), card('Created', I.time(u.created_at))),
          el('h3', null, 'Your permissions'), u.id === 0 ? el('div', null, 'root: every action') : permSummary(u.permissions)));
      } catch (e) {
        I.clear($('#me')).appendChild(I.errorBox(e));
      }
    }
    async function pats() {
      try {
        const l = await api('GET', '/personal-access-tokens');
        fill($('#pats tbody'), l.length ? l.map(t => el('tr', null, td(t.name), td(t.expiry_at ? I.time(t.expiry_at) : 'never'),
          td(button('Delete', 'danger', async () => {
            if (!await I.confirm('Delete token ' + t.name + '?', 'Anything logging in with it is refused from now on.', 'Delete')) return;
            await action(null, () => api('DELETE', '/personal-access-tokens/' + enc(t.name)), 'Token ' + t.name + ' deleted', pats);
          })))) : [emptyRow(3, 'No tokens.')]);
      } catch (e) {
        fill($('#pats tbody'), [emptyRow(3, e.message, 'error')]);
      }
    }
    async function users() {
      I.clear($('#users-note'));
      try {
        const l = await api('GET', '/users');
        fill($('#users tbody'), l.map(u => el('tr', { dataset: { user: u.id } }, td(u.id), td(u.username), td(u.status), td(I.time(u.created_at)),
          td(button('Permissions', 'ghost', () => open(u.id))))));
        I.rendered();
      } catch (e) {
        fill($('#users tbody'), [emptyRow(5, e.message, 'error')]);
      }
    }
    async function open(id) {
      try {
        current = await api('GET', '/users/' + id);
      } catch (e) {
        I.fail(e);
        return;
      }
      $('#user-card').hidden = false;
      $('#user-title').textContent = 'User ' + current.username + ' (#' + current.id + ')';
      checks($('#perm-global'), 'g_', current.permissions && current.permissions.global);
      $('#perm-streams').value = JSON.stringify((current.permissions && current.permissions.streams) || {}, null, 2);
      $('#user-status').value = current.status;
      $('#user-card').scrollIntoView({ block: 'nearest' });
    }
    onSubmit('#user-perms', (f) => {
      let streams;
      try { streams = JSON.parse($('#perm-streams').value || '{}'); } catch (e) { I.fail('Stream permissions: ' + e.message); return; }
      const perms = { global: readChecks(f, 'g_'), streams: Object.keys(streams).length ? streams : null };
      action(f, () => api('PUT', '/users/' + current.id + '/permissions', { permissions: perms }), 'Permissions of ' + current.username + ' saved', () => open(current.id));
    });
    $('#user-save-status').addEventListener('click', () => action(null, () => api('PUT', '/users/' + current.id, { status: $('#user-status').value }), 'Status set', users));
    $('#user-delete').addEventListener('click', async () => {
      if (!current || !await I.confirm('Delete user ' + current.username + '?', 'The user and its tokens are deleted.', 'Delete')) return;
      action(null, () => api('DELETE', '/users/' + current.id), 'User deleted', () => { $('#user-card').hidden = true; return users(); });
    });
    checks($('#new-perm-global'), 'n_', null);
    onSubmit('#create-user', (f, d) => action(f, () => api('POST', '/users', {
      username: d.username, password: d.password, status: d.status, permissions: { global: readChecks(f, 'n_'), streams: null },
    }), 'User ' + d.username + ' created', () => { f.reset(); return users(); }));
    onSubmit('#create-pat', (f, d) => action(f, async () => {
      const r = await api('POST', '/personal-access-tokens', { name: d.name, expiry: Number(d.expiry || 0) });
      I.clear($('#pat-raw')).appendChild(el('div', { class: 'msg ok' }, 'Token ' + d.name + ' (shown once): ', el('code', null, r.token)));
    }, null, () => { f.reset(); return pats(); }));
    $('#refresh').addEventListener('click', () => { me(); pats(); users(); });
    me(); pats(); users();
  };

  // --------------------------------------------------------------- charts
  pages.charts = function () {
    const grid = document.querySelector('.chart-grid');
    if (body.dataset.metrics !== 'true') {
      I.clear(grid).appendChild(el('div', { class: 'msg error' }, 'Metrics are off on this node (http.metrics.enabled = false): there is nothing to chart.'));
      return;
    }
    const perSec = v => I.rate(v);
    const bps = v => I.bytes(v) + '/s';
    const charts = {
      messages: new C.LineChart($('#chart-messages'), [{ name: 'in', color: '#2f7de1' }, { name: 'out', color: '#e0803a' }], { format: perSec }),
      bytes: new C.LineChart($('#chart-bytes'), [{ name: 'in', color: '#2f7de1' }, { name: 'out', color: '#e0803a' }], { format: bps }),
      latency: new C.LineChart($('#chart-latency'), [{ name: 'p50', color: '#3aa675' }, { name: 'p90', color: '#d9a400' }, { name: 'p99', color: '#d6453d' }], { format: C.seconds }),
      conns: new C.LineChart($('#chart-conns'), [{ name: 'tcp', color: '#2f7de1' }, { name: 'http', color: '#8a58c9' }, { name: 'quic', color: '#3aa675' }, { name: 'websocket', color: '#e0803a' }], { format: v => (Number.isInteger(v) ? String(v) : v.toFixed(1)) }),
    };
    let prev = null;
    async function sample() {
      let s;
      try {
        s = await api('GET', '/ui/api/summary');
      } catch (e) {
        I.fail(e);
        return;
      }
      const t = s.time_ms;
      if (prev) {
        const ms = t - prev.time_ms;
        charts.messages.push(t, [C.perSecond(prev.messages_in, s.messages_in, ms), C.perSecond(prev.messages_out, s.messages_out, ms)]);
        charts.bytes.push(t, [C.perSecond(prev.bytes_in, s.bytes_in, ms), C.perSecond(prev.bytes_out, s.bytes_out, ms)]);
        const d = C.delta(prev.latency, s.latency);
        const qs = [0.5, 0.9, 0.99].map(qq => d && d.count ? C.quantile(qq, d.bounds, d.counts, d.count) : null);
        charts.latency.push(t, qs);
      }
      const c = s.connections || {};
      charts.conns.push(t, ['tcp', 'http', 'quic', 'websocket'].map(k => c[k] || 0));
      prev = s;
      stamp('#updated');
      I.rendered();
    }
    sample();
    setInterval(sample, 1000);
  };

  function start() {
    const page = body.dataset.page;
    if (page !== 'login' && !I.session()) {
      I.toLogin();
      return;
    }
    if (page !== 'login') I.header();
    const fn = pages[page];
    if (fn) fn();
    body.dataset.ready = 'true';
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
