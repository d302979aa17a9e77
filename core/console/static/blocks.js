/*
 * blocks.js: renders a tool call's visual blocks (spec 000) as its web
 * widget does: text as markdown (marked, sanitized by DOMPurify), charts
 * with Chart.js, tables with sorting and their next pages through
 * continuations, files as downloads, maps with Leaflet.
 *
 * A plain script, no build step: load the vendored libraries it uses
 * (vendor/marked, vendor/dompurify, vendor/chartjs, vendor/leaflet with its
 * CSS), then this file and blocks.css, and call
 *
 *   ToolhostBlocks.render(container, blocks, {
 *     resume: async function (id) { ... return answer; }
 *   });
 *
 * blocks is the `blocks` list of a call answer (as core/blocks validates
 * them). options.resume(id) fetches the next page of a table: it is given
 * the table's continuation.id and returns the next call answer ({blocks,
 * ...}, as POST /v1/continuations answers), whose first table block holds
 * the rows to append. Without options.resume a table shows its first page
 * only. render returns {elements, destroy()}; destroy frees the charts,
 * maps and object URLs.
 *
 * Everything a tool sends is data: text reaches the page only as text
 * nodes, except a text block's markdown, which goes through DOMPurify (and
 * is shown as plain text when DOMPurify is not loaded).
 */
(function () {
  'use strict';

  var OSM_TILES = 'https://tile.openstreetmap.org/{z}/{x}/{y}.png';
  var OSM_ATTRIBUTION = '© OpenStreetMap contributors';
  var PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
  var uid = 0;

  function h(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') e.textContent = v;
        else if (k === 'className') e.className = v;
        else e.setAttribute(k, v === true ? '' : v);
      });
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }

  function nextID(prefix) {
    uid += 1;
    return 'tb-' + prefix + '-' + uid;
  }

  function str(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'object') {
      try { return JSON.stringify(v); } catch (e) { return String(v); }
    }
    return String(v);
  }

  function isNum(v) {
    return typeof v === 'number' && isFinite(v);
  }

  function humanSize(n) {
    if (n < 1024) return n + (n === 1 ? ' byte' : ' bytes');
    var units = ['KB', 'MB', 'GB'];
    var x = n;
    var i = -1;
    do { x /= 1024; i++; } while (x >= 1024 && i < units.length - 1);
    return (x < 10 ? x.toFixed(1) : Math.round(x)) + ' ' + units[i];
  }

  function failure(wrapper, message) {
    wrapper.classList.add('tb-failed');
    wrapper.appendChild(h('p', { className: 'tb-error', role: 'alert', text: message }));
  }

  // ---- text ----------------------------------------------------------

  function renderText(wrapper, block) {
    var md = str(block.markdown);
    var body = h('div', { className: 'tb-markdown' });
    if (window.marked && window.DOMPurify && window.DOMPurify.isSupported !== false) {
      var html = window.marked.parse(md, { gfm: true, async: false });
      // Tool output is text with formatting, never part of the console:
      // no styles (a tool could cover or restyle the page), no forms or
      // controls (a tool could pose as the console and take what the user
      // types), no frames or media.
      var frag = window.DOMPurify.sanitize(html, {
        RETURN_DOM_FRAGMENT: true,
        FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'label', 'fieldset',
          'iframe', 'frame', 'object', 'embed', 'video', 'audio', 'source', 'dialog', 'details', 'summary', 'svg', 'math'],
        FORBID_ATTR: ['style', 'class', 'id', 'name', 'form', 'formaction', 'tabindex', 'accesskey', 'autofocus', 'popover']
      });
      // Links a tool wrote are http(s) only, and open outside the console;
      // any other (mailto:, a path of the console, ...) stays as its text.
      Array.prototype.forEach.call(frag.querySelectorAll('a[href]'), function (a) {
        if (!/^https?:\/\//i.test(a.getAttribute('href'))) {
          a.removeAttribute('href');
          return;
        }
        a.setAttribute('target', '_blank');
        a.setAttribute('rel', 'noopener noreferrer');
      });
      body.appendChild(frag);
    } else {
      body.appendChild(h('pre', { text: md }));
    }
    wrapper.appendChild(body);
  }

  // ---- chart ---------------------------------------------------------

  function color(i, alpha) {
    var c = PALETTE[i % PALETTE.length];
    if (alpha === undefined) return c;
    var n = parseInt(c.slice(1), 16);
    return 'rgba(' + (n >> 16 & 255) + ',' + (n >> 8 & 255) + ',' + (n & 255) + ',' + alpha + ')';
  }

  function scatterPoint(v, i, labels) {
    if (Array.isArray(v)) return { x: Number(v[0]), y: Number(v[1]) };
    if (v && typeof v === 'object') return { x: Number(v.x), y: Number(v.y) };
    var x = labels && isNum(Number(labels[i])) && labels[i] !== '' ? Number(labels[i]) : i;
    return { x: x, y: Number(v) };
  }

  function chartConfig(spec) {
    var type = spec.type;
    var labels = Array.isArray(spec.labels) ? spec.labels.map(str) : [];
    var series = Array.isArray(spec.series) ? spec.series : [];
    var opts = spec.options || {};
    var n = 0;
    series.forEach(function (s) { n = Math.max(n, (s.values || []).length); });
    if (!labels.length && type !== 'scatter') {
      for (var i = 0; i < n; i++) labels.push(String(i + 1));
    }
    var datasets = series.map(function (s, i) {
      var values = Array.isArray(s.values) ? s.values : [];
      var d = { label: str(s.name) || 'Series ' + (i + 1) };
      if (type === 'scatter') {
        d.data = values.map(function (v, j) { return scatterPoint(v, j, spec.labels); });
        d.backgroundColor = color(i, 0.8);
        d.borderColor = color(i);
        d.pointRadius = 4;
      } else if (type === 'pie') {
        d.data = values;
        d.backgroundColor = values.map(function (_, j) { return color(j, 0.85); });
        d.borderColor = '#fff';
      } else {
        d.data = values;
        d.borderColor = color(i);
        d.backgroundColor = color(i, type === 'bar' ? 0.8 : 0.25);
        if (type === 'area') d.fill = opts.stacked ? (i === 0 ? 'origin' : '-1') : 'origin';
        if (type === 'line') d.fill = false;
        if (type === 'line' || type === 'area') d.tension = 0.2;
      }
      return d;
    });
    var config = {
      type: type === 'area' ? 'line' : type,
      data: { datasets: datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { display: datasets.length > 1 || type === 'pie' },
          title: { display: !!spec.title, text: str(spec.title) }
        }
      }
    };
    if (type !== 'scatter') config.data.labels = labels;
    if (type === 'bar' || type === 'line' || type === 'area') {
      var stacked = !!opts.stacked;
      config.options.scales = { x: { stacked: stacked }, y: { stacked: stacked, beginAtZero: type !== 'line' } };
    }
    if (type === 'scatter') {
      // Room around the extreme points, so that none sits on the frame.
      config.options.scales = { x: { type: 'linear', grace: '5%' }, y: { grace: '5%' } };
      config.options.layout = { padding: 8 };
    }
    return config;
  }

  // A text version of the chart, for screen readers and for anyone who
  // wants the numbers.
  function chartData(spec) {
    var labels = Array.isArray(spec.labels) ? spec.labels : [];
    var series = Array.isArray(spec.series) ? spec.series : [];
    var head = h('tr', null, [h('th', { scope: 'col', text: spec.type === 'scatter' ? 'Point' : 'Label' })].concat(
      series.map(function (s, i) { return h('th', { scope: 'col', text: str(s.name) || 'Series ' + (i + 1) }); })));
    var n = 0;
    series.forEach(function (s) { n = Math.max(n, (s.values || []).length); });
    var rows = [];
    for (var i = 0; i < n; i++) {
      rows.push(h('tr', null, [h('th', { scope: 'row', text: labels[i] !== undefined ? str(labels[i]) : String(i + 1) })].concat(
        series.map(function (s) { return h('td', { text: str((s.values || [])[i]) }); }))));
    }
    return h('details', { className: 'tb-chart-data' }, [
      h('summary', { text: 'Data' }),
      h('table', { className: 'tb-table' }, [h('thead', null, [head]), h('tbody', null, rows)])
    ]);
  }

  function renderChart(wrapper, block, state) {
    var spec = block.spec || {};
    var type = String(spec.type || '');
    wrapper.setAttribute('data-chart-type', type);
    var label = (spec.title ? str(spec.title) + ': ' : '') + type + ' chart of ' +
      (spec.series || []).map(function (s) { return str(s.name); }).filter(Boolean).join(', ');
    if (spec.title) wrapper.appendChild(h('h3', { className: 'tb-title', text: str(spec.title) }));
    var canvas = h('canvas', { role: 'img', 'aria-label': label }, ['A ' + type + ' chart; its data is in the table below.']);
    var box = h('div', { className: 'tb-chart-box' }, [canvas]);
    wrapper.appendChild(box);
    wrapper.appendChild(chartData(spec));
    return function () {
      if (!window.Chart) {
        failure(wrapper, 'Charts cannot be drawn: Chart.js is not loaded.');
        return;
      }
      var config = chartConfig(spec);
      if (spec.title) config.options.plugins.title.display = false; // shown as a heading
      state.charts.push(new window.Chart(canvas, config));
    };
  }

  // ---- table ---------------------------------------------------------

  function compare(a, b) {
    var an = a === null || a === undefined || a === '';
    var bn = b === null || b === undefined || b === '';
    if (an || bn) return an === bn ? 0 : (an ? 1 : -1); // empty cells last
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    if (typeof a === 'boolean' && typeof b === 'boolean') return (a ? 1 : 0) - (b ? 1 : 0);
    return str(a).localeCompare(str(b), undefined, { numeric: true, sensitivity: 'base' });
  }

  function pageInfoText(t) {
    var shown = t.rows.length;
    var pi = t.pageInfo;
    if (pi && isNum(pi.total)) return shown + ' of ' + pi.total;
    if (t.continuation || (pi && pi.has_more)) return shown + ' rows, more available';
    return shown + (shown === 1 ? ' row' : ' rows');
  }

  function renderTable(wrapper, block, state, options) {
    var columns = (block.columns || []).map(function (c) {
      return { key: str(c.key), title: c.title !== undefined ? str(c.title) : str(c.key), align: c.align };
    });
    var topts = block.options || {};
    var sortable = topts.sortable !== false;
    var t = {
      rows: (block.rows || []).slice(),
      pageInfo: block.page_info || null,
      continuation: block.continuation && block.continuation.id ? String(block.continuation.id) : null,
      sortKey: null,
      sortDir: 'ascending',
      filter: '',
      loading: false
    };
    var captionID = nextID('caption');
    if (block.title) wrapper.appendChild(h('h3', { className: 'tb-title', id: captionID, text: str(block.title) }));

    var search = null;
    if (topts.searchable) {
      var searchID = nextID('search');
      search = h('input', { type: 'search', id: searchID, className: 'tb-search', autocomplete: 'off' });
      wrapper.appendChild(h('div', { className: 'tb-search-row' }, [h('label', { 'for': searchID, text: 'Search' }), search]));
      search.addEventListener('input', function () { t.filter = search.value.toLowerCase(); draw(); });
    }

    var headers = columns.map(function (c) {
      var th = h('th', { scope: 'col', className: c.align ? 'tb-align-' + c.align : null, 'data-key': c.key });
      if (sortable) {
        var btn = h('button', { type: 'button', className: 'tb-sort' }, [c.title, h('span', { className: 'tb-sort-mark', 'aria-hidden': 'true' })]);
        btn.addEventListener('click', function () { sortBy(c.key); });
        th.appendChild(btn);
      } else {
        th.textContent = c.title;
      }
      return th;
    });
    var tbody = h('tbody');
    var table = h('table', {
      className: 'tb-table',
      'aria-labelledby': block.title ? captionID : null,
      'aria-label': block.title ? null : 'Table'
    }, [h('thead', null, [h('tr', null, headers)]), tbody]);
    wrapper.appendChild(h('div', { className: 'tb-table-scroll', tabindex: '0', role: 'region', 'aria-label': block.title ? str(block.title) : 'Table' }, [table]));

    var info = h('p', { className: 'tb-page-info', 'aria-live': 'polite' });
    var status = h('p', { className: 'tb-table-status', role: 'status' });
    var more = h('button', { type: 'button', className: 'tb-next' }, ['Next page']);
    var footer = h('div', { className: 'tb-table-footer' }, [info, more, status]);
    wrapper.appendChild(footer);

    function sortBy(key) {
      if (t.sortKey === key) t.sortDir = t.sortDir === 'ascending' ? 'descending' : 'ascending';
      else { t.sortKey = key; t.sortDir = 'ascending'; }
      draw();
    }

    function visibleRows() {
      var rows = t.rows.map(function (r, i) { return { r: r, i: i }; });
      if (t.filter) {
        rows = rows.filter(function (x) {
          return columns.some(function (c) { return str(x.r[c.key]).toLowerCase().indexOf(t.filter) >= 0; });
        });
      }
      if (t.sortKey !== null) {
        var k = t.sortKey;
        var dir = t.sortDir === 'ascending' ? 1 : -1;
        rows.sort(function (x, y) {
          var c = compare(x.r[k], y.r[k]);
          // Empty cells stay last in both directions; ties keep the order.
          var xe = x.r[k] === null || x.r[k] === undefined || x.r[k] === '';
          var ye = y.r[k] === null || y.r[k] === undefined || y.r[k] === '';
          if (xe !== ye) return xe ? 1 : -1;
          return c * dir || x.i - y.i;
        });
      }
      return rows.map(function (x) { return x.r; });
    }

    function draw() {
      headers.forEach(function (th) {
        var k = th.getAttribute('data-key');
        if (k === t.sortKey) th.setAttribute('aria-sort', t.sortDir);
        else th.removeAttribute('aria-sort');
      });
      var frag = document.createDocumentFragment();
      visibleRows().forEach(function (r) {
        frag.appendChild(h('tr', null, columns.map(function (c) {
          return h('td', { className: c.align ? 'tb-align-' + c.align : null, text: str(r[c.key]) });
        })));
      });
      tbody.replaceChildren(frag);
      info.textContent = pageInfoText(t);
      var canLoad = !!(t.continuation && options.resume);
      more.hidden = !canLoad;
      if (!canLoad) {
        if (more.parentNode) more.parentNode.removeChild(more);
        stopObserving();
      }
    }

    var observer = null;
    function stopObserving() {
      if (observer) { observer.disconnect(); observer = null; }
    }

    function load() {
      if (t.loading || !t.continuation || !options.resume) return;
      t.loading = true;
      more.disabled = true;
      more.textContent = 'Loading…';
      wrapper.setAttribute('aria-busy', 'true');
      status.textContent = '';
      var id = t.continuation;
      Promise.resolve().then(function () { return options.resume(id); }).then(function (answer) {
        var next = answer && Array.isArray(answer.blocks) ? answer.blocks.filter(function (b) { return b && b.type === 'table'; })[0] : null;
        if (!next) {
          // A dead continuation: the first pages stay, loading more ends.
          var why = answer && answer.error && answer.error.message ? answer.error.message : 'the answer has no table';
          t.continuation = null;
          status.textContent = 'No more pages could be loaded: ' + why;
        } else {
          t.rows = t.rows.concat(Array.isArray(next.rows) ? next.rows : []);
          t.pageInfo = next.page_info || null;
          t.continuation = next.continuation && next.continuation.id && !(next.page_info && next.page_info.has_more === false) ? String(next.continuation.id) : null;
        }
      }, function (err) {
        // The id stays: the button tries again.
        status.textContent = 'The next page could not be loaded: ' + (err && err.message ? err.message : str(err));
        stopObserving();
      }).then(function () {
        t.loading = false;
        more.disabled = false;
        more.textContent = 'Next page';
        wrapper.removeAttribute('aria-busy');
        draw();
      });
    }
    more.addEventListener('click', load);

    draw();
    return function () {
      // Infinite scroll: the next page loads when the button scrolls into
      // view. Not when it is already in view as the table appears (a click
      // does it then), so that a short table does not fetch every page at
      // once.
      if (!t.continuation || !options.resume || !('IntersectionObserver' in window)) return;
      var seen = null;
      observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          if (seen === false && e.isIntersecting) load();
          seen = e.isIntersecting;
        });
      });
      observer.observe(more);
      state.observers.push(function () { stopObserving(); });
    };
  }

  // ---- file ----------------------------------------------------------

  function decodeBase64(s) {
    var bin = atob(String(s).replace(/\s+/g, ''));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }

  function renderFile(wrapper, block, state) {
    var name = str(block.name) || 'download';
    var mime = str(block.mime) || 'application/octet-stream';
    var bytes;
    try {
      bytes = decodeBase64(block.data || '');
    } catch (e) {
      failure(wrapper, 'The file ' + name + ' cannot be offered: its data is not base64.');
      return;
    }
    // The blob is opaque bytes whatever the tool calls it: a text/html or
    // SVG "file" opened from a blob: URL would be a document of the
    // console's own origin.
    var url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    state.urls.push(url);
    var size = humanSize(bytes.length);
    var a = h('a', {
      className: 'tb-file-link',
      href: url,
      download: name,
      type: mime,
      'aria-label': 'Download ' + name + ', ' + size
    }, [h('span', { className: 'tb-file-icon', 'aria-hidden': 'true', text: '⤓' }), h('span', { className: 'tb-file-name', text: name })]);
    wrapper.appendChild(h('p', { className: 'tb-file' }, [a, ' ', h('span', { className: 'tb-file-meta', text: size + ' · ' + mime })]));
  }

  // ---- map -----------------------------------------------------------

  function markerTitle(m) {
    return str(m.title !== undefined ? m.title : (m.label !== undefined ? m.label : m.name));
  }

  function renderMap(wrapper, block, state) {
    var center = block.center || {};
    var markers = Array.isArray(block.markers) ? block.markers : [];
    var title = str(block.title);
    if (title) wrapper.appendChild(h('h3', { className: 'tb-title', text: title }));
    var box = h('div', { className: 'tb-map-box', role: 'region', 'aria-label': (title || 'Map') + ', ' + markers.length + (markers.length === 1 ? ' marker' : ' markers') });
    wrapper.appendChild(box);
    var list = null;
    if (markers.length) {
      list = h('ul', { className: 'tb-map-markers', 'aria-label': 'Markers' }, markers.map(function (m) {
        var t = markerTitle(m);
        return h('li', null, [(t ? t + ' ' : '') + '(' + Number(m.lat).toFixed(5) + ', ' + Number(m.lon).toFixed(5) + ')']);
      }));
    }
    var foot = h('div', { className: 'tb-map-footer' });
    if (list) foot.appendChild(list);
    if (block.link && /^https?:\/\//i.test(str(block.link))) {
      foot.appendChild(h('p', { className: 'tb-map-link' }, [h('a', { href: str(block.link), target: '_blank', rel: 'noopener noreferrer', text: 'Open the map' })]));
    }
    wrapper.appendChild(foot);
    return function () {
      if (!window.L) {
        failure(wrapper, 'The map cannot be shown: Leaflet is not loaded.');
        return;
      }
      var L = window.L;
      var zoom = isNum(block.zoom) ? block.zoom : 13;
      var map = L.map(box, { center: [Number(center.lat), Number(center.lon)], zoom: zoom, keyboard: true });
      state.maps.push(map);
      var tiles = str(block.tile_url) || OSM_TILES;
      var attribution = block.attribution !== undefined ? str(block.attribution) : (block.tile_url ? '' : OSM_ATTRIBUTION);
      // Leaflet inserts the attribution as HTML: a tool's is text, escaped
      // (sanitized HTML could still lay an invisible link over the page).
      attribution = h('span', { text: attribution }).innerHTML;
      // Without network the tiles fail, quietly; the markers are drawn
      // anyway (they are vector paths, not images).
      L.tileLayer(tiles, { attribution: attribution, maxZoom: 22, subdomains: block.subdomains || 'abc' }).addTo(map);
      markers.forEach(function (m, i) {
        var t = markerTitle(m);
        var mk = L.circleMarker([Number(m.lat), Number(m.lon)], {
          radius: 8, weight: 2, color: '#fff', fillColor: color(i), fillOpacity: 0.9
        }).addTo(map);
        if (t) {
          mk.bindTooltip(h('span', { text: t }));
          mk.bindPopup(h('span', { text: t }));
        }
      });
      // The box may get its size after the map was made (a late layout).
      if ('ResizeObserver' in window) {
        var ro = new ResizeObserver(function () { map.invalidateSize(); });
        ro.observe(box);
        state.observers.push(function () { ro.disconnect(); });
      }
    };
  }

  // ---- render --------------------------------------------------------

  var renderers = { text: renderText, chart: renderChart, table: renderTable, file: renderFile, map: renderMap };

  function render(container, blocks, options) {
    options = options || {};
    var state = { charts: [], maps: [], urls: [], observers: [] };
    var elements = [];
    (Array.isArray(blocks) ? blocks : []).forEach(function (block, i) {
      var type = block && typeof block.type === 'string' ? block.type : '';
      var wrapper = h('section', { className: 'tb-block tb-' + (renderers[type] ? type : 'unknown'), 'data-block-type': type || 'unknown', 'aria-label': (type || 'unknown') + ' block ' + (i + 1) });
      var after = null;
      try {
        if (renderers[type]) after = renderers[type](wrapper, block, state, options);
        else failure(wrapper, 'A block of an unknown type (' + (type || 'none') + ') cannot be shown.');
      } catch (e) {
        failure(wrapper, 'This ' + type + ' block cannot be shown: ' + (e && e.message ? e.message : e));
      }
      container.appendChild(wrapper);
      elements.push(wrapper);
      // Charts and maps need their box in the page to measure it.
      if (after) {
        try { after(); } catch (e) { failure(wrapper, 'This ' + type + ' block cannot be shown: ' + (e && e.message ? e.message : e)); }
      }
    });
    return {
      elements: elements,
      destroy: function () {
        state.charts.forEach(function (c) { c.destroy(); });
        state.maps.forEach(function (m) { m.remove(); });
        state.urls.forEach(function (u) { URL.revokeObjectURL(u); });
        state.observers.forEach(function (f) { f(); });
        elements.forEach(function (e) { if (e.parentNode) e.parentNode.removeChild(e); });
      }
    };
  }

  window.ToolhostBlocks = { render: render, version: 1 };
})();
