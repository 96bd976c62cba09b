// The eip web console: reads the admin API every second and shows the running flow; its
// forms and buttons call the API's changes. Everything read is put into the page as text
// (textContent, attributes), never as markup: payloads and names are data.
'use strict';

(function () {
  const TOKEN_KEY = 'eip-admin-token';
  const POLL_MS = 1000;
  const DEAD_PAGE = 20;
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);

  /** An element `tag` with `props` (class, dataset, title, on<event>, attributes) and children (text or nodes). */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = value;
      else if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else if (key in node && typeof value !== 'string') node[key] = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  /** A failed API call: its HTTP status and the error the server gave. */
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** The `error` of a JSON error body, else the text itself. */
  function errorOf(text, status) {
    try {
      const body = JSON.parse(text);
      if (body && typeof body.error === 'string') {
        return body.closest ? body.error + ' (did you mean `' + body.closest + '`?)' : body.error;
      }
    } catch (_) { /* not JSON */ }
    return text || 'HTTP ' + status;
  }

  /** Calls the API: `method path` with `body` as JSON; the answer's text. */
  async function call(method, path, body) {
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    if (response.status === 401) {
      askToken(errorOf(text, 401));
    }
    if (!response.ok) throw new ApiError(response.status, errorOf(text, response.status));
    return text;
  }

  async function json(method, path, body) {
    return JSON.parse(await call(method, path, body));
  }

  // --- status line and token ---------------------------------------------------------------

  function say(message, kind) {
    const status = $('status');
    status.textContent = message;
    status.className = kind || '';
  }

  function askToken(reason) {
    $('token-reason').textContent = reason;
    $('token-form').hidden = false;
    $('token-input').focus();
  }

  function setupToken() {
    $('token-button').addEventListener('click', () => {
      const form = $('token-form');
      form.hidden = !form.hidden;
    });
    $('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $('token-input').value.trim());
      $('token-input').value = '';
      $('token-form').hidden = true;
      say('token set for this tab', 'ok');
      loadGraph();
      refresh();
    });
    $('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      say('token forgotten', 'ok');
    });
  }

  // --- the graph -----------------------------------------------------------------------------

  /** Graph nodes by `channel:NAME` and `route:NAME`: their group and counter text. */
  let graphNodes = new Map();

  function nodeKind(group) {
    const classes = group.classList;
    if (classes.contains('route')) return 'route';
    if (classes.contains('point-to-point') || classes.contains('publish-subscribe')) return 'channel';
    return 'other';
  }

  async function loadGraph() {
    let text;
    try {
      text = await call('GET', '/api/graph.svg');
    } catch (e) {
      $('graph').replaceChildren(el('p', { class: 'muted' }, 'the flow could not be drawn: ' + e.message));
      return;
    }
    const parsed = new DOMParser().parseFromString(text, 'image/svg+xml');
    const root = parsed.documentElement;
    if (root.namespaceURI !== SVG_NS || root.localName !== 'svg') {
      $('graph').replaceChildren(el('p', { class: 'muted' }, 'the flow drawing is not SVG'));
      return;
    }
    for (const active of root.querySelectorAll('script, foreignObject')) active.remove();
    const svg = document.importNode(root, true);
    // Room below the lowest nodes for their counters.
    const box = svg.viewBox.baseVal;
    if (box && box.height) {
      svg.setAttribute('viewBox', [box.x, box.y, box.width, box.height + 14].join(' '));
      svg.setAttribute('height', String(box.height + 14));
    }
    const nodes = new Map();
    for (const group of svg.querySelectorAll('g.node')) {
      const kind = nodeKind(group);
      if (kind === 'other') continue;
      const counter = document.createElementNS(SVG_NS, 'text');
      const x = Number(group.dataset.x) + Number(group.dataset.width) / 2;
      const y = Number(group.dataset.y) + Number(group.dataset.height) + 11;
      counter.setAttribute('x', String(x));
      counter.setAttribute('y', String(y));
      counter.setAttribute('text-anchor', 'middle');
      counter.setAttribute('class', 'counter');
      group.append(counter);
      nodes.set(kind + ':' + group.dataset.name, { group, counter });
    }
    graphNodes = nodes;
    $('graph').replaceChildren(svg);
    if (lastFlow) drawCounters(lastFlow);
  }

  function channelLine(c) {
    const n = c.counters;
    let line = 'in ' + n.in + ' · out ' + n.out;
    if (n.waiting) line += ' · ' + n.waiting + ' waiting';
    if (n.dead_letters) line += ' · ' + n.dead_letters + ' dead';
    return [line, n.waiting > 0 || n.dead_letters > 0];
  }

  function routeLine(r) {
    const n = r.counters;
    let line = n.handled + ' handled';
    if (n.failed) line += ' · ' + n.failed + ' failed';
    if (r.paused) line += ' · paused';
    return [line, n.failed > 0 || r.paused];
  }

  function drawCounters(flow) {
    const put = (key, [line, busy]) => {
      const node = graphNodes.get(key);
      if (!node) return;
      if (node.counter.textContent !== line) node.counter.textContent = line;
      node.counter.classList.toggle('busy', busy);
    };
    for (const c of flow.channels) put('channel:' + c.name, channelLine(c));
    for (const r of flow.routes) put('route:' + r.name, routeLine(r));
  }

  // --- tables ----------------------------------------------------------------------------------

  /**
   * Shows `items` in `tbody`, one row each, keyed by `keyOf`: a row whose item did not change
   * is kept as it is (its buttons stay the same elements), a changed one is built again.
   */
  function syncRows(tbody, items, keyOf, build) {
    const old = new Map();
    for (const row of tbody.rows) old.set(row.dataset.key, row);
    const rows = items.map((item) => {
      const key = keyOf(item);
      const signature = JSON.stringify(item);
      const kept = old.get(key);
      if (kept && kept.dataset.signature === signature) return kept;
      const row = build(item);
      row.dataset.key = key;
      row.dataset.signature = signature;
      return row;
    });
    const same = rows.length === tbody.rows.length && rows.every((row, i) => row === tbody.rows[i]);
    if (!same) tbody.replaceChildren(...rows);
  }

  const num = (value, name) => el('td', { class: 'n' + (name === 'dead_letters' && value ? ' nonzero' : ''), dataset: { counter: name } }, value);
  const rate = (value) => el('td', { class: 'n' }, Number(value).toFixed(1));

  function showChannels(channels) {
    syncRows($('channels').tBodies[0], channels, (c) => c.name, (c) => {
      const n = c.counters;
      return el('tr', { dataset: { name: c.name } },
        el('td', {}, c.name), el('td', {}, c.kind), el('td', {}, c.broker || c.store),
        num(n.in, 'in'), num(n.out, 'out'), num(n.waiting, 'waiting'), num(n.in_flight, 'in_flight'),
        num(n.dead_letters, 'dead_letters'), num(n.invalid, 'invalid'),
        rate(c.rates.in_per_second), rate(c.rates.out_per_second));
    });
    fillList('channel-names', channels.map((c) => c.name));
    fillList('pubsub-names', channels.filter((c) => c.kind === 'publish-subscribe').map((c) => c.name));
  }

  /** The Pause or Resume button of the route or adapter `item` (`what`: `routes`, `adapters`). */
  function pauseButton(what, item, noun) {
    const action = item.paused ? 'resume' : 'pause';
    return el('button', {
      type: 'button',
      class: action,
      onclick: () => change('POST', '/api/' + what + '/' + encodeURIComponent(item.name) + '/' + action, undefined,
        (now) => noun + ' ' + now.name + (now.paused ? ' paused' : ' resumed')),
    }, action === 'pause' ? 'Pause' : 'Resume');
  }

  function showAdapters(adapters) {
    syncRows($('adapters').tBodies[0], adapters, (a) => a.name, (a) => {
      const error = a.last_error ? a.last_error.error : '';
      return el('tr', { class: a.paused ? 'paused' : '', dataset: { name: a.name } },
        el('td', {}, a.name), el('td', {}, a.kind), el('td', {}, a.channel),
        el('td', { class: a.connected ? '' : 'nonzero' }, a.connected ? 'yes' : 'no'),
        el('td', { class: 'n' }, a.reconnects === null ? '' : a.reconnects),
        el('td', { title: a.last_error ? a.last_error.at : undefined }, error),
        el('td', {}, pauseButton('adapters', a, a.section)));
    });
  }

  function showRoutes(routes) {
    syncRows($('routes').tBodies[0], routes, (r) => r.name, (r) => {
      const n = r.counters;
      const button = pauseButton('routes', r, 'route');
      const error = r.last_error ? r.last_error.error : '';
      return el('tr', { class: r.paused ? 'paused' : '', dataset: { name: r.name } },
        el('td', {}, r.name), el('td', {}, r.from), num(n.taken, 'taken'), num(n.handled, 'handled'),
        num(n.failed, 'failed'), el('td', { title: r.last_error ? r.last_error.at : undefined }, error),
        el('td', {}, button));
    });
  }

  /** Runtime changes matched to what the flow shows: the first unclaimed one `same` accepts. */
  function claimer(changes) {
    const left = changes.slice();
    return (same) => {
      const at = left.findIndex(same);
      return at < 0 ? null : left.splice(at, 1)[0];
    };
  }

  function removeButton(what, id) {
    return el('button', {
      type: 'button',
      class: 'remove',
      onclick: () => change('DELETE', '/api/' + what + 's/' + id, undefined, () => what + ' ' + id + ' removed'),
    }, 'Remove');
  }

  function showJoins(joins, runtime) {
    const claim = claimer(runtime);
    const rows = joins.map((j) => {
      const added = claim((r) => r.from === j.from && r.to === j.to);
      return Object.assign({}, j, { runtime: added ? added.id : null });
    });
    syncRows($('joins').tBodies[0], rows, (j) => [j.from, j.to, j.runtime].join('\n'), (j) =>
      el('tr', { dataset: { from: j.from, to: j.to } },
        el('td', {}, j.from), el('td', {}, j.to), el('td', { class: 'n' }, j.hops),
        el('td', {}, [j.filter, j.archival ? 'archival' : null].filter(Boolean).join(', ')),
        el('td', {}, j.runtime === null ? el('span', { class: 'muted' }, 'flow file') : removeButton('join', j.runtime))));
  }

  function showBindings(exchanges, runtime) {
    const claim = claimer(runtime);
    const rows = [];
    for (const x of exchanges) {
      for (const b of x.bindings) {
        const added = claim((r) => r.exchange === x.name && (r.key || null) === b.key &&
          r.to.join('\n') === b.to.join('\n'));
        rows.push({ exchange: x.name, id: b.id, key: b.key, to: b.to, runtime: added ? added.id : null });
      }
      if (x.alternate) rows.push({ exchange: x.name, id: 'alternate', key: null, to: [x.alternate], alternate: true, runtime: null });
    }
    syncRows($('bindings').tBodies[0], rows, (b) => b.exchange + '\n' + b.id, (b) =>
      el('tr', { dataset: { exchange: b.exchange } },
        el('td', {}, b.exchange), el('td', {}, b.alternate ? '(alternate)' : b.key === null ? '(all)' : b.key),
        el('td', {}, b.to.join(', ')),
        el('td', {}, b.runtime === null ? el('span', { class: 'muted' }, b.alternate ? '' : 'flow file') : removeButton('binding', b.runtime))));
    fillList('exchange-names', exchanges.map((x) => x.name));
  }

  function fillList(id, names) {
    const list = $(id);
    const now = names.join('\n');
    if (list.dataset.names === now) return;
    list.dataset.names = now;
    list.replaceChildren(...names.map((name) => el('option', { value: name })));
  }

  function showHealth(health) {
    const badge = $('health');
    badge.textContent = health.ready ? 'ready' : 'waiting: ' + health.waiting_for.join('; ');
    badge.className = 'badge ' + (health.ready ? 'ready' : 'waiting');
  }

  // --- dead letters ----------------------------------------------------------------------------

  let deadOffset = 0;
  let deadTotal = 0;
  const deadSelected = new Set();

  function payloadText(payload) {
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    return text === undefined ? '' : text;
  }

  async function loadDeadLetters() {
    let page;
    try {
      page = await json('GET', '/api/dead-letters?offset=' + deadOffset + '&limit=' + DEAD_PAGE);
    } catch (e) {
      $('dead-total').textContent = e.status === 404 ? '(this server has no dead letter browser)' : '(' + e.message + ')';
      return;
    }
    deadTotal = page.total;
    if (page.messages.length === 0 && deadOffset > 0 && deadOffset >= page.total) {
      deadOffset = Math.max(0, deadOffset - DEAD_PAGE);
      return loadDeadLetters();
    }
    const shown = page.messages.length
      ? (page.offset + 1) + '–' + (page.offset + page.messages.length) + ' of ' + page.total
      : 'none';
    $('dead-total').textContent = '(' + page.channel + ': ' + shown + ')';
    const ids = new Set(page.messages.map((m) => m.id));
    for (const id of Array.from(deadSelected)) if (!ids.has(id)) deadSelected.delete(id);
    syncRows($('dead-letters').tBodies[0], page.messages, (m) => m.id, (m) => {
      const death = m.death || {};
      const text = payloadText(m.payload);
      const box = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'select ' + m.id });
      box.checked = deadSelected.has(m.id);
      box.addEventListener('change', () => {
        if (box.checked) deadSelected.add(m.id); else deadSelected.delete(m.id);
      });
      return el('tr', { dataset: { id: m.id } },
        el('td', {}, box), el('td', { class: 'id', title: m.id }, m.id.slice(0, 8) + '…'),
        el('td', {}, death.channel || ''), el('td', {}, death.reason || ''),
        el('td', {}, death.error || ''),
        el('td', { class: 'payload', title: text }, text.length > 200 ? text.slice(0, 200) + '…' : text));
    });
  }

  function deadIds() {
    const ids = Array.from(deadSelected);
    if (ids.length === 0) say('select dead letters first', 'error');
    return ids;
  }

  function setupDeadLetters() {
    $('dead-all').addEventListener('change', (event) => {
      for (const box of $('dead-letters').querySelectorAll('input.pick')) {
        box.checked = event.target.checked;
        box.dispatchEvent(new Event('change'));
      }
    });
    $('dead-replay').addEventListener('click', () => {
      const ids = deadIds();
      if (ids.length === 0) return;
      change('POST', '/api/dead-letters/replay', { ids }, (answer) => {
        const done = answer.replayed.map((r) => r.id.slice(0, 8) + ' → ' + r.channel);
        const failed = answer.failed.map((f) => f.id.slice(0, 8) + ': ' + f.reason);
        return 'replayed ' + answer.replayed.length + (done.length ? ' (' + done.join(', ') + ')' : '') +
          (failed.length ? '; not replayed: ' + failed.join(', ') : '');
      });
      deadSelected.clear();
      $('dead-all').checked = false;
    });
    $('dead-delete').addEventListener('click', () => {
      const ids = deadIds();
      if (ids.length === 0) return;
      change('POST', '/api/dead-letters/delete', { ids }, (answer) => 'deleted ' + answer.deleted + (answer.deleted === 1 ? ' dead letter' : ' dead letters'));
      deadSelected.clear();
      $('dead-all').checked = false;
    });
    $('dead-previous').addEventListener('click', () => {
      deadOffset = Math.max(0, deadOffset - DEAD_PAGE);
      loadDeadLetters();
    });
    $('dead-next').addEventListener('click', () => {
      if (deadOffset + DEAD_PAGE < deadTotal) deadOffset += DEAD_PAGE;
      loadDeadLetters();
    });
  }

  // --- changes ---------------------------------------------------------------------------------

  /** Calls a change and says what became of it; `describe` words the answer. */
  async function change(method, path, body, describe) {
    try {
      const text = await call(method, path, body);
      say(describe(text ? JSON.parse(text) : null), 'ok');
      // The drawing shows the joins and bindings as they are now.
      if (path.startsWith('/api/joins') || path.startsWith('/api/bindings')) loadGraph();
      await refresh();
      return true;
    } catch (e) {
      say(e.message, 'error');
      return false;
    }
  }

  function value(id) {
    return $(id).value.trim();
  }

  function setupForms() {
    $('join-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const join = { from: value('join-from'), to: value('join-to') };
      if (value('join-filter')) join.filter = value('join-filter');
      if (value('join-hops')) join.hops = Number(value('join-hops'));
      if ($('join-archival').checked) join.archival = true;
      const done = await change('POST', '/api/joins', join, (j) => 'join ' + j.id + ' added: ' + j.from + ' → ' + j.to);
      if (done) event.target.reset();
    });
    $('binding-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const binding = {
        exchange: value('binding-exchange'),
        to: value('binding-to').split(',').map((s) => s.trim()).filter(Boolean),
      };
      if (value('binding-key')) binding.key = value('binding-key');
      const done = await change('POST', '/api/bindings', binding,
        (b) => 'binding ' + b.id + ' added: ' + b.exchange + ' ' + (b.key === null ? '(all)' : b.key) + ' → ' + b.to.join(', '));
      if (done) event.target.reset();
    });
    $('send-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const text = $('send-payload').value;
      let payload;
      try {
        payload = JSON.parse(text);
      } catch (_) {
        payload = text;
      }
      const message = { payload };
      if (value('send-subject')) message.subject = value('send-subject');
      const channel = value('send-channel');
      change('POST', '/api/channels/' + encodeURIComponent(channel) + '/messages', message,
        (sent) => 'test message ' + sent.id + ' sent to ' + channel + ': ' + sent.outcome + (sent.reason ? ' (' + sent.reason + ')' : ''));
    });
  }

  // --- polling ---------------------------------------------------------------------------------

  let lastFlow = null;
  let polling = false;

  async function refresh() {
    if (polling) return;
    polling = true;
    try {
      const [flow, changes] = await Promise.all([json('GET', '/api/flow'), json('GET', '/api/changes')]);
      lastFlow = flow;
      showHealth(flow.health);
      showChannels(flow.channels);
      showRoutes(flow.routes);
      showAdapters(flow.adapters);
      showJoins(flow.joins, changes.joins);
      showBindings(flow.exchanges, changes.bindings);
      drawCounters(flow);
      await loadDeadLetters();
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      const badge = $('health');
      badge.textContent = e.status === 401 ? 'token needed' : 'unreachable';
      badge.className = 'badge down';
      if (e.status !== 401) say('the admin server did not answer: ' + e.message, 'error');
    } finally {
      polling = false;
    }
  }

  function start() {
    setupToken();
    setupForms();
    setupDeadLetters();
    loadGraph();
    refresh();
    setInterval(refresh, POLL_MS);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
