// toolhost console: the Playground. Forms are built from the field
// descriptions the server derives from the tools' parameter types; answers
// are shown as spec 000's widget shows them (call text while the call
// runs, then the result or failure text, warnings, the content the model
// gets, and the visual blocks through ToolhostBlocks).
(function () {
  "use strict";

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "hidden") e.hidden = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  var uid = 0;
  function nextID() { uid += 1; return "f" + uid; }

  function post(action, body) {
    return fetch("/playground/" + action, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    }).then(function (r) { return r.json().then(function (j) { return { ok: r.ok, status: r.status, body: j }; }); });
  }

  // field builds the control of one type; it returns {node, get}, get()
  // answering the JSON value (undefined: leave it out).
  function field(spec, label) {
    var id = nextID();
    var lab = el("label", { "for": id, text: label + (spec.type ? " (" + spec.type + ")" : "") });
    var input, get;
    switch (spec.kind) {
      case "string":
        input = el("input", { id: id, type: "text" });
        get = function () { return input.value; };
        break;
      case "integer":
      case "number":
        input = el("input", { id: id, type: "number", step: spec.kind === "integer" ? "1" : "any" });
        get = function () { return input.value === "" ? undefined : Number(input.value); };
        break;
      case "boolean":
        input = el("input", { id: id, type: "checkbox" });
        get = function () { return input.checked; };
        break;
      case "date":
        input = el("input", { id: id, type: "date" });
        get = function () { return input.value || undefined; };
        break;
      case "date-time":
        input = el("input", { id: id, type: "datetime-local", step: "1" });
        // The control gives a local time without a zone; the tool gets it
        // in UTC (RFC 3339 wants a zone).
        get = function () { return input.value ? new Date(input.value).toISOString().replace(/\.\d{3}Z$/, "Z") : undefined; };
        break;
      case "time":
        input = el("input", { id: id, type: "time", step: "1" });
        get = function () { return input.value ? (input.value.length === 5 ? input.value + ":00" : input.value) : undefined; };
        break;
      case "null":
        input = el("span", { id: id, text: "null" });
        get = function () { return null; };
        break;
      case "literal":
        input = el("select", { id: id }, spec.values.map(function (v, i) { return el("option", { value: String(i), text: JSON.stringify(v) }); }));
        get = function () { return spec.values[Number(input.value)]; };
        break;
      case "array":
        if (spec.elem) return listField(spec, label, id, lab);
        return jsonField(spec, id, lab, "[]");
      case "object":
        if (spec.value) return dictField(spec, label, id, lab);
        return jsonField(spec, id, lab, "{}");
      case "union":
        return unionField(spec, label, id, lab);
      default:
        return jsonField(spec, id, lab, "null");
    }
    return { node: el("div", { "class": "field" }, [lab, input]), get: get };
  }

  function jsonField(spec, id, lab, empty) {
    var ta = el("textarea", { id: id, rows: "3", spellcheck: "false" });
    ta.value = empty;
    return {
      node: el("div", { "class": "field" }, [lab, ta]),
      get: function () { return JSON.parse(ta.value || "null"); }
    };
  }

  function listField(spec, label, id, lab) {
    var items = [], box = el("ol", { "class": "items", id: id });
    var add = el("button", { type: "button", text: "Add an item" });
    function addItem() {
      var f = field(spec.elem, label + " item " + (items.length + 1));
      var rm = el("button", { type: "button", text: "Remove", "aria-label": "Remove item" });
      var li = el("li", {}, [f.node, rm]);
      var entry = { f: f, li: li };
      rm.addEventListener("click", function () { items.splice(items.indexOf(entry), 1); li.remove(); });
      items.push(entry);
      box.appendChild(li);
    }
    add.addEventListener("click", addItem);
    return {
      node: el("fieldset", { "class": "field" }, [el("legend", { text: lab.textContent }), box, add]),
      get: function () { return items.map(function (it) { return it.f.get(); }); }
    };
  }

  function dictField(spec, label, id, lab) {
    var rows = [], box = el("div", { "class": "items", id: id });
    var add = el("button", { type: "button", text: "Add a key" });
    add.addEventListener("click", function () {
      var k = field(spec.key || { kind: "string", type: "str" }, label + " key");
      var v = field(spec.value, label + " value");
      var rm = el("button", { type: "button", text: "Remove" });
      var row = el("div", { "class": "kv" }, [k.node, v.node, rm]);
      var entry = { k: k, v: v };
      rm.addEventListener("click", function () { rows.splice(rows.indexOf(entry), 1); row.remove(); });
      rows.push(entry);
      box.appendChild(row);
    });
    return {
      node: el("fieldset", { "class": "field" }, [el("legend", { text: lab.textContent }), box, add]),
      get: function () { var o = {}; rows.forEach(function (r) { o[r.k.get()] = r.v.get(); }); return o; }
    };
  }

  function unionField(spec, label, id, lab) {
    var pick = el("select", { id: id }, spec.options.map(function (o, i) { return el("option", { value: String(i), text: o.type }); }));
    var holder = el("div", { "class": "alt" });
    var current;
    function show() {
      current = field(spec.options[Number(pick.value)], label);
      holder.innerHTML = "";
      holder.appendChild(current.node);
    }
    pick.addEventListener("change", show);
    show();
    return {
      node: el("fieldset", { "class": "field" }, [el("legend", { text: lab.textContent }), el("label", { "for": id, text: "Which type" }), pick, holder]),
      get: function () { return current.get(); }
    };
  }

  // buildForm fills a form's fields from a tool's description and returns
  // the function that reads the arguments.
  function buildForm(form, tool) {
    var box = form.querySelector(".fields");
    box.innerHTML = "";
    var getters = tool.params.map(function (p) {
      var f = field(p, p.name);
      var node = f.node;
      if (p.description) node.appendChild(el("small", { "class": "hint", text: p.description }));
      if (p.optional) {
        var use = el("input", { type: "checkbox", id: nextID() });
        var wrap = el("div", { "class": "optional" }, [el("label", { "for": use.id, text: "Send " + p.name + " (optional)" }), use, node]);
        box.appendChild(wrap);
        return function (args) { if (use.checked) { var v = f.get(); if (v !== undefined) args[p.name] = v; } };
      }
      box.appendChild(node);
      return function (args) { var v = f.get(); if (v !== undefined) args[p.name] = v; };
    });
    return function () { var args = {}; getters.forEach(function (g) { g(args); }); return args; };
  }

  // showAnswer renders a call's answer (or refusal) into box.
  function showAnswer(box, res) {
    box.innerHTML = "";
    var a = res.body;
    if (!res.ok && a.error) {
      box.appendChild(el("p", { "class": "error refused", role: "alert", text: a.error }));
      (a.errors || []).forEach(function (e) { box.appendChild(el("p", { "class": "error", text: e.message })); });
      return;
    }
    if (a.call_text) box.appendChild(el("p", { "class": "call-text", text: a.call_text }));
    if (a.success) {
      box.appendChild(el("p", { "class": "result-text ok", text: a.result_text || "Done." }));
    } else {
      var msg = a.result_text || (a.error ? a.error.kind + ": " + a.error.message : "failed");
      box.appendChild(el("p", { "class": "result-text error failure", role: "alert", text: msg }));
    }
    if (a.warnings && a.warnings.length) {
      box.appendChild(el("ul", { "class": "warnings" }, a.warnings.map(function (w) { return el("li", { text: w }); })));
    }
    var blocks = el("div", { "class": "blocks" });
    box.appendChild(blocks);
    if (a.blocks && a.blocks.length && window.ToolhostBlocks) {
      window.ToolhostBlocks.render(blocks, a.blocks, {
        resume: function (id) {
          return post("continue", { id: id }).then(function (r) {
            if (!r.ok) throw new Error(r.body.error || "the next page failed");
            return r.body;
          });
        }
      });
    }
    box.appendChild(el("details", { "class": "content" }, [el("summary", { text: "Content the model gets" }),
      el("pre", { text: JSON.stringify(a.content, null, 2) })]));
    var meta = "attempts " + a.attempts + " · " + a.duration_ms + " ms" + (a.runtime ? " · " + a.runtime : "");
    box.appendChild(el("p", { "class": "meta", text: meta }));
    if (a.logs && a.logs.length) {
      box.appendChild(el("details", {}, [el("summary", { text: "Printed output" }), el("pre", { text: a.logs.join("\n") })]));
    }
    if (a.error && a.error.traceback) {
      box.appendChild(el("details", {}, [el("summary", { text: "Traceback" }), el("pre", { text: a.error.traceback })]));
    }
  }

  // run calls a tool: its call text shows while it runs.
  function run(box, action, body, after) {
    box.innerHTML = "";
    var running = el("p", { "class": "running", text: "Running…" });
    box.appendChild(running);
    if (action === "call") {
      post("calltext", body).then(function (r) {
        if (r.ok && r.body.call_text && running.isConnected) running.textContent = r.body.call_text;
      });
    }
    return post(action, body).then(function (res) { showAnswer(box, res); if (after) after(res); });
  }

  var answerBox = document.getElementById("pg-answer");

  // A group's tool.
  var toolForm = document.getElementById("pg-tool");
  if (toolForm && toolForm.dataset.form) {
    var read = buildForm(toolForm, JSON.parse(toolForm.dataset.form));
    toolForm.addEventListener("submit", function (e) {
      e.preventDefault();
      var args;
      try { args = read(); } catch (err) { showAnswer(answerBox, { ok: false, body: { error: "not JSON: " + err.message } }); return; }
      run(answerBox, "call", { group: toolForm.dataset.group, tool: toolForm.dataset.tool, arguments: args });
    });
  }

  // Starting an agent's session.
  var start = document.getElementById("pg-start");
  if (start) {
    start.addEventListener("submit", function (e) {
      e.preventDefault();
      var vars;
      try { vars = JSON.parse(document.getElementById("var-extra").value || "{}"); } catch (err) {
        showAnswer(answerBox, { ok: false, body: { error: "more variables: not a JSON object: " + err.message } });
        return;
      }
      start.querySelectorAll("[data-var]").forEach(function (i) { if (i.value !== "") vars[i.dataset.var] = i.value; });
      post("start", { agent: start.dataset.agent, variables: vars }).then(function (r) {
        if (!r.ok) { showAnswer(answerBox, r); return; }
        window.location.href = "/playground?session=" + encodeURIComponent(r.body.session.id);
      });
    });
  }

  // A session, carried on.
  var panel = document.getElementById("pg-session");
  if (!panel) return;
  var sid = panel.dataset.session;
  var form = document.getElementById("pg-tool");
  var chosen = null, readArgs = null;
  function refresh() {
    return post("session", { session: sid }).then(function (r) {
      if (!r.ok) { showAnswer(answerBox, r); return; }
      show(r.body);
    });
  }
  function show(v) {
      var s = v.session;
      panel.querySelector(".s-agent").textContent = s.agent;
      panel.querySelector(".s-state").textContent = s.state;
      panel.querySelector(".s-open").textContent = s.closed ? "finished" : "open";
      panel.querySelector(".s-instructions").textContent = v.instructions;
      var pick = document.getElementById("s-state-pick");
      pick.innerHTML = "";
      v.states.forEach(function (n) { var o = el("option", { value: n, text: n }); if (n === s.state) o.selected = true; pick.appendChild(o); });
      var list = panel.querySelector(".s-tools");
      list.innerHTML = "";
      (s.closed ? [] : v.tools).forEach(function (t) {
        var b = el("button", { type: "button", text: t.name, title: t.description });
        b.addEventListener("click", function () {
          chosen = t;
          form.hidden = false;
          readArgs = buildForm(form, t);
        });
        list.appendChild(el("li", {}, [b]));
      });
      if (chosen && !v.tools.some(function (t) { return t.object_name === chosen.object_name; })) { form.hidden = true; chosen = null; }
      var msgs = panel.querySelector(".s-messages");
      msgs.innerHTML = "";
      (v.messages || []).forEach(function (m) { msgs.appendChild(el("li", { text: m.text })); });
      panel.querySelector(".s-finish").disabled = !!s.closed;
  }
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!chosen) return;
    var args;
    try { args = readArgs(); } catch (err) { showAnswer(answerBox, { ok: false, body: { error: "not JSON: " + err.message } }); return; }
    run(answerBox, "session-call", { session: sid, tool: chosen.object_name, arguments: args }, refresh);
  });
  panel.querySelector(".s-move").addEventListener("submit", function (e) {
    e.preventDefault();
    post("state", { session: sid, state: document.getElementById("s-state-pick").value }).then(function (r) {
      if (!r.ok) showAnswer(answerBox, r);
      refresh();
    });
  });
  panel.querySelector(".s-finish").addEventListener("click", function () {
    post("finish", { session: sid }).then(function (r) {
      if (!r.ok) showAnswer(answerBox, r);
      refresh();
    });
  });
  // The page brings the session's view; later ones are asked for.
  if (panel.dataset.view) show(JSON.parse(panel.dataset.view)); else refresh();
})();
