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

  // Tables that stack into cards on a narrow screen show each cell under
  // its column's name.
  document.querySelectorAll("table.stack").forEach(function (t) {
    var names = Array.prototype.map.call(t.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
    t.querySelectorAll("tbody tr").forEach(function (tr) {
      Array.prototype.forEach.call(tr.children, function (cell, i) { if (names[i]) cell.setAttribute("data-label", names[i]); });
    });
  });

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

  // Live statuses: while a group is Installing, the statuses are read
  // again every second and the rows updated in place.
  var live = document.querySelector("table.groups[data-live=true]");
  function poll() {
    fetch("/tools?format=json", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (gs) {
      var busy = false;
      gs.forEach(function (g) {
        if (g.status === "Installing") busy = true;
        document.querySelectorAll("tr[data-group]").forEach(function (row) {
          if (row.dataset.group !== g.name) return;
          var cell = row.querySelector(".status");
          if (cell && cell.textContent !== g.status) {
            cell.textContent = g.status;
            cell.className = "status status-" + g.status;
            var extra = row.querySelectorAll(".missing, .message, .problems-count");
            extra.forEach(function (x) { x.remove(); });
            if (g.message) { var m = document.createElement("span"); m.className = "message"; m.textContent = " " + g.message; cell.after(m); }
            // An Invalid group: its errors counted, as the page shows it.
            var n = g.status === "Invalid" && g.errors ? g.errors.length : 0;
            if (n) { var c = document.createElement("span"); c.className = "problems-count"; c.textContent = n + (n === 1 ? " error" : " errors"); cell.after(" ", c); }
          }
        });
      });
      if (busy) setTimeout(poll, 1000);
    }).catch(function () { setTimeout(poll, 3000); });
  }
  if (live) setTimeout(poll, 1000);

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
