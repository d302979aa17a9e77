// toolhost console: the small behaviours of the server-rendered pages.
// Nothing here is needed to read a page; it adds live statuses, uploads by
// drag and drop, confirmations, schema tabs and copy buttons.
(function () {
  "use strict";

  // Forms that ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  labelCells(document);

  // The Menu button: on a phone (the CSS shows it under 700 px) the
  // screens are behind it; Escape closes the menu and gives the focus back
  // to the button. On a wide screen the button is hidden and the menu
  // always shown.
  var toggle = document.querySelector(".menu-toggle"), menu = document.getElementById("menu");
  if (toggle && menu) {
    document.documentElement.classList.add("has-menu");
    toggle.hidden = false;
    var setOpen = function (open) {
      toggle.setAttribute("aria-expanded", String(open));
      menu.classList.toggle("open", open);
    };
    toggle.addEventListener("click", function () { setOpen(toggle.getAttribute("aria-expanded") !== "true"); });
    menu.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && toggle.getAttribute("aria-expanded") === "true" && getComputedStyle(toggle).display !== "none") {
        setOpen(false);
        toggle.focus();
      }
    });
  }

  // Schema tabs and copy buttons on a group's page.
  document.querySelectorAll(".tool-card").forEach(function (card) {
    var tabs = card.querySelectorAll("[role=tab]");
    function show(d) {
      tabs.forEach(function (t) { t.setAttribute("aria-selected", String(t.dataset.dialect === d)); });
      card.querySelectorAll(".schema").forEach(function (p) { p.hidden = p.dataset.dialect !== d; });
    }
    tabs.forEach(function (t) { t.addEventListener("click", function () { show(t.dataset.dialect); }); });
    if (tabs.length) show(tabs[0].dataset.dialect);
  });
  document.addEventListener("click", function (e) {
    var id = e.target.getAttribute && e.target.getAttribute("data-copy");
    if (!id) return;
    var text = document.getElementById(id).textContent;
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(function () { e.target.textContent = "Copied"; });
  });

  // Tables that stack into cards on a narrow screen show each cell under
  // its column's name.
  function labelCells(root) {
    root.querySelectorAll("table.stack").forEach(function (t) {
      var names = Array.prototype.map.call(t.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
      t.querySelectorAll("tbody tr").forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (cell, i) { if (names[i]) cell.setAttribute("data-label", names[i]); });
      });
    });
  }

  // Live statuses: the lists of groups (section[data-version]) follow the
  // server's stream of changes; when the version it sends is not the one
  // shown, the page is read again and the lists replaced in place, with
  // the focus kept on the same link and a word to screen readers.
  var lists = document.querySelectorAll("section[data-version][id]");
  if (lists.length && window.EventSource) {
    var said = document.createElement("p");
    said.className = "visually-hidden";
    said.setAttribute("role", "status");
    document.body.appendChild(said);
    var reading = false, again = false;
    var refresh = function () {
      if (reading) { again = true; return; }
      reading = true;
      fetch(location.pathname + location.search, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok || new URL(r.url).pathname !== location.pathname) throw new Error("signed out");
        return r.text();
      }).then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var focused = document.activeElement, href = focused && focused.getAttribute && focused.getAttribute("href");
        document.querySelectorAll("section[data-version][id]").forEach(function (old) {
          var next = fresh.getElementById(old.id);
          if (!next) return;
          var had = old.contains(focused);
          old.replaceWith(next);
          labelCells(next);
          if (had && href) {
            var same = next.querySelector('a[href="' + CSS.escape(href) + '"]');
            if (same) same.focus();
          }
        });
        said.textContent = "The groups were updated.";
      }).catch(function () {}).then(function () {
        reading = false;
        if (again) { again = false; refresh(); }
      });
    };
    var events = new EventSource("/tools?format=events");
    events.addEventListener("groups", function (e) {
      var shown = document.querySelector("section[data-version][id]");
      if (shown && shown.getAttribute("data-version") !== e.data) refresh();
    });
    window.addEventListener("pagehide", function () { events.close(); });
  }

  // Uploads: each file is PUT to /resources/PATH; a folder's files keep
  // their paths inside it.
  var drop = document.getElementById("drop");
  if (!drop) return;
  var log = document.getElementById("upload-log");
  var prefix = document.getElementById("prefix");
  function note(text, ok) {
    var li = document.createElement("li");
    li.textContent = text;
    li.className = ok ? "ok" : "error";
    log.appendChild(li);
  }
  function target(path) {
    var p = (prefix.value || "").replace(/^\/+|\/+$/g, "");
    return (p ? p + "/" : "") + path;
  }
  function put(path, file) {
    var url = "/resources/" + path.split("/").map(encodeURIComponent).join("/");
    return fetch(url, { method: "PUT", body: file, credentials: "same-origin" }).then(function (r) {
      return r.text().then(function (t) { note(r.ok ? "uploaded " + path : path + ": " + t.trim(), r.ok); return r.ok; });
    });
  }
  function uploadAll(items) {
    return items.reduce(function (p, it) { return p.then(function () { return put(target(it.path), it.file); }); }, Promise.resolve())
      .then(function () { window.location.reload(); });
  }
  function fromInput(input) {
    return Array.prototype.map.call(input.files, function (f) {
      var path = f.webkitRelativePath || f.name;
      return { path: path, file: f };
    });
  }
  document.getElementById("pick-files").addEventListener("change", function (e) { uploadAll(fromInput(e.target)); });
  document.getElementById("pick-folder").addEventListener("change", function (e) {
    // webkitRelativePath starts with the folder's own name: kept, so that
    // dropping "crm/" gives "crm/…" paths.
    uploadAll(fromInput(e.target));
  });
  function walk(entry, path, out) {
    return new Promise(function (resolve) {
      if (entry.isFile) {
        entry.file(function (f) { out.push({ path: path + f.name, file: f }); resolve(); }, resolve);
      } else if (entry.isDirectory) {
        var reader = entry.createReader(), all = [];
        (function more() {
          reader.readEntries(function (es) {
            if (!es.length) {
              Promise.all(all.map(function (c) { return walk(c, path + entry.name + "/", out); })).then(resolve);
              return;
            }
            all = all.concat(Array.prototype.slice.call(es));
            more();
          }, resolve);
        })();
      } else resolve();
    });
  }
  ["dragenter", "dragover"].forEach(function (n) {
    drop.addEventListener(n, function (e) { e.preventDefault(); drop.classList.add("over"); });
  });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  drop.addEventListener("drop", function (e) {
    e.preventDefault();
    drop.classList.remove("over");
    var out = [], waits = [];
    Array.prototype.forEach.call(e.dataTransfer.items || [], function (it) {
      var entry = it.webkitGetAsEntry && it.webkitGetAsEntry();
      if (entry) waits.push(walk(entry, "", out));
    });
    if (!waits.length) {
      Array.prototype.forEach.call(e.dataTransfer.files, function (f) { out.push({ path: f.name, file: f }); });
    }
    Promise.all(waits).then(function () { uploadAll(out); });
  });
})();
