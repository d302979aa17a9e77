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

  // A form is built from the schema as a person reads it: each field is
  // labelled with its parameter's name (and description), required ones
  // marked, a Literal's options as plain values, an optional union
  // (X | None) as an optional X, booleans as toggles, lists with add and
  // remove, optional parameters behind an "Add" button, and each refusal's
  // error next to its field.

  // plain shows a JSON value as a Python user writes it.
  function plain(v) {
    if (v === null) return "None";
    if (v === true) return "True";
    if (v === false) return "False";
    return String(v);
  }
  var kindNames = { string: "text", integer: "whole number", number: "number", boolean: "true or false", date: "date",
    "date-time": "date and time", time: "time", "null": "None", literal: "one of a set", array: "list", object: "object", any: "any value" };
  // nullable answers X for a union X | None, else null.
  function nullable(spec) {
    if (spec.kind !== "union" || !spec.options) return null;
    var rest = spec.options.filter(function (o) { return o.kind !== "null"; });
    return rest.length === 1 && spec.options.length === 2 ? rest[0] : null;
  }
  // labelOf is a field's label: its name, a mark when required.
  function labelOf(tag, id, name, required) {
    var lab = el(tag, tag === "label" ? { "for": id } : {}, [document.createTextNode(name)]);
    if (required) {
      lab.appendChild(el("span", { "class": "required-mark", "aria-hidden": "true", text: " *" }));
      lab.appendChild(el("span", { "class": "visually-hidden", text: " (required)" }));
    }
    return lab;
  }

  // field builds the control of one type, labelled name; it returns
  // {node, get, focus}, get() answering the JSON value (undefined: leave
  // it out). o.required marks it; o.hint is its description.
  function field(spec, name, o) {
    o = o || {};
    var inner = nullable(spec);
    if (inner) {
      // X | None: X's control; left empty, it sends None.
      var f = field(inner, name, o);
      return { node: f.node, focus: f.focus, get: function () { var v = f.get(); return v === undefined || v === "" ? null : v; } };
    }
    var id = nextID();
    var input, get, lab = labelOf("label", id, name, o.required);
    switch (spec.kind) {
      case "string":
        input = el("input", { id: id, type: "text" });
        get = function () { return input.value; };
        break;
      case "integer":
      case "number":
        input = el("input", { id: id, type: "number", step: spec.kind === "integer" ? "1" : "any", inputmode: spec.kind === "integer" ? "numeric" : "decimal" });
        get = function () { return input.value === "" ? undefined : Number(input.value); };
        break;
      case "boolean":
        input = el("input", { id: id, type: "checkbox", role: "switch" });
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
        input = el("output", { id: id, text: "None (always)" });
        get = function () { return null; };
        break;
      case "literal":
        input = el("select", { id: id }, [el("option", { value: "", text: "Choose…" })].concat(
          spec.values.map(function (v, i) { return el("option", { value: String(i), text: plain(v) }); })));
        get = function () { return input.value === "" ? undefined : spec.values[Number(input.value)]; };
        break;
      case "array":
        if (spec.elem) return listField(spec, name, o);
        return jsonField(id, lab, o, "[]", "a JSON list");
      case "object":
        if (spec.value) return dictField(spec, name, o);
        return jsonField(id, lab, o, "{}", "a JSON object");
      case "union":
        return unionField(spec, name, o);
      default:
        return jsonField(id, lab, o, "null", "any JSON value");
    }
    if (o.required) input.setAttribute("aria-required", "true");
    var node = el("div", { "class": "field" }, [lab, input]);
    hint(node, input, o.hint);
    return { node: node, get: get, focus: function () { input.focus(); } };
  }

  // hint adds a field's description, tied to its control.
  function hint(node, control, text) {
    if (!text) return;
    var h = el("small", { "class": "hint", id: nextID(), text: text });
    node.appendChild(h);
    if (control) control.setAttribute("aria-describedby", h.id);
  }

  function jsonField(id, lab, o, empty, what) {
    var ta = el("textarea", { id: id, rows: "3", spellcheck: "false" });
    ta.value = empty;
    lab.appendChild(el("span", { "class": "type", text: " (" + what + ")" }));
    var node = el("div", { "class": "field" }, [lab, ta]);
    hint(node, ta, o.hint);
    return {
      node: node, focus: function () { ta.focus(); },
      get: function () { return JSON.parse(ta.value || "null"); }
    };
  }

  function listField(spec, name, o) {
    var items = [], box = el("ol", { "class": "items" });
    var add = el("button", { type: "button", text: "Add an item", "aria-label": "Add an item to " + name });
    function addItem() {
      var f = field(spec.elem, "Item " + (items.length + 1), {});
      var rm = el("button", { type: "button", text: "Remove", "aria-label": "Remove item " + (items.length + 1) + " of " + name });
      var li = el("li", {}, [f.node, rm]);
      var entry = { f: f, li: li };
      rm.addEventListener("click", function () { items.splice(items.indexOf(entry), 1); li.remove(); add.focus(); });
      items.push(entry);
      box.appendChild(li);
      f.focus();
    }
    add.addEventListener("click", addItem);
    var node = el("fieldset", { "class": "field" }, [labelOf("legend", "", name, o.required), box, add]);
    hint(node, null, o.hint);
    return {
      node: node, focus: function () { (items.length ? items[0].f : { focus: function () { add.focus(); } }).focus(); },
      get: function () { return items.map(function (it) { return it.f.get(); }); }
    };
  }

  function dictField(spec, name, o) {
    var rows = [], box = el("div", { "class": "items" });
    var add = el("button", { type: "button", text: "Add a key", "aria-label": "Add a key to " + name });
    add.addEventListener("click", function () {
      var n = rows.length + 1;
      var k = field(spec.key || { kind: "string", type: "str" }, "Key " + n, {});
      var v = field(spec.value, "Value " + n, {});
      var rm = el("button", { type: "button", text: "Remove", "aria-label": "Remove key " + n + " of " + name });
      var row = el("div", { "class": "kv" }, [k.node, v.node, rm]);
      var entry = { k: k, v: v };
      rm.addEventListener("click", function () { rows.splice(rows.indexOf(entry), 1); row.remove(); add.focus(); });
      rows.push(entry);
      box.appendChild(row);
      k.focus();
    });
    var node = el("fieldset", { "class": "field" }, [labelOf("legend", "", name, o.required), box, add]);
    hint(node, null, o.hint);
    return {
      node: node, focus: function () { add.focus(); },
      get: function () { var out = {}; rows.forEach(function (r) { out[r.k.get()] = r.v.get(); }); return out; }
    };
  }

  // unionField: a union of several types other than None asks which.
  function unionField(spec, name, o) {
    var id = nextID();
    var pick = el("select", { id: id }, spec.options.map(function (x, i) {
      return el("option", { value: String(i), text: x.kind === "literal" ? x.values.map(plain).join(" / ") : (kindNames[x.kind] || x.type) });
    }));
    var holder = el("div", { "class": "alt" });
    var current;
    function show() {
      current = field(spec.options[Number(pick.value)], "Value", {});
      holder.innerHTML = "";
      holder.appendChild(current.node);
    }
    pick.addEventListener("change", show);
    show();
    var node = el("fieldset", { "class": "field" }, [labelOf("legend", "", name, o.required), el("label", { "for": id, text: "Kind of value" }), pick, holder]);
    hint(node, pick, o.hint);
    return { node: node, focus: function () { pick.focus(); }, get: function () { return current.get(); } };
  }

  // buildForm fills a form's fields from a tool's description and returns
  // the function that reads the arguments; form.showErrors(errors) puts
  // each error of a refusal next to its field and answers the rest.
  function buildForm(form, tool) {
    form.noValidate = true;
    var box = form.querySelector(".fields");
    box.innerHTML = "";
    var nodes = {};
    if (!tool.params.length) box.appendChild(el("p", { "class": "note", text: "This tool takes no arguments." }));
    var getters = tool.params.map(function (p) {
      var f = field(p, p.name, { required: !p.optional, hint: p.description });
      var node = f.node;
      node.setAttribute("data-param", p.name);
      if (p.optional) {
        // Collapsed behind "Add NAME": sent only once added.
        var used = false;
        var addB = el("button", { type: "button", "class": "optional-add", text: "Add " + p.name, "aria-expanded": "false" });
        var rmB = el("button", { type: "button", text: "Remove " + p.name });
        var wrap = el("div", { "class": "optional", "data-param": p.name }, [addB, el("div", { "class": "optional-body", hidden: true }, [node, rmB])]);
        var body = wrap.querySelector(".optional-body");
        addB.addEventListener("click", function () { used = true; body.hidden = false; addB.hidden = true; addB.setAttribute("aria-expanded", "true"); f.focus(); });
        rmB.addEventListener("click", function () { used = false; body.hidden = true; addB.hidden = false; addB.setAttribute("aria-expanded", "false"); addB.focus(); });
        nodes[p.name] = { node: node, show: function () { if (!used) addB.click(); } };
        box.appendChild(wrap);
        return function (args) { if (used) { var v = f.get(); if (v !== undefined) args[p.name] = v; } };
      }
      nodes[p.name] = { node: node, show: function () {} };
      box.appendChild(node);
      return function (args) { var v = f.get(); if (v !== undefined) args[p.name] = v; };
    });
    form.clearErrors = function () {
      form.querySelectorAll(".field-error").forEach(function (e) { e.remove(); });
      form.querySelectorAll(".field.invalid").forEach(function (f) { f.classList.remove("invalid"); });
      form.querySelectorAll("[aria-invalid]").forEach(function (c) { c.removeAttribute("aria-invalid"); c.removeAttribute("aria-errormessage"); });
    };
    form.showErrors = function (errors) {
      form.clearErrors();
      var rest = [], first = null;
      (errors || []).forEach(function (e) {
        var at = e.param && nodes[e.param];
        if (!at) { rest.push(e); return; }
        at.show();
        var msg = el("span", { "class": "field-error", id: nextID(), text: (e.path && e.path !== e.param ? e.path + ": " : "") + e.message });
        at.node.classList.add("invalid");
        at.node.appendChild(msg);
        var c = at.node.querySelector("input, select, textarea");
        if (c) {
          c.setAttribute("aria-invalid", "true");
          c.setAttribute("aria-errormessage", msg.id);
          c.setAttribute("aria-describedby", ((c.getAttribute("aria-describedby") || "") + " " + msg.id).trim());
          if (!first) first = c;
        }
      });
      if (first) first.focus();
      return rest;
    };
    return function () { var args = {}; getters.forEach(function (g) { g(args); }); return args; };
  }

  // showAnswer renders a call's answer (or refusal) into box.
  function showAnswer(box, res, form) {
    box.innerHTML = "";
    var a = res.body;
    if (form && form.clearErrors) form.clearErrors();
    if (!res.ok && a.error) {
      // A refusal of the arguments: each error next to its field; only
      // those that belong to no field are listed here.
      var errs = a.errors || [];
      var rest = form && form.showErrors ? form.showErrors(errs) : errs;
      var placed = errs.length - rest.length;
      var head = placed ? "The tool refused the arguments: " + placed + " problem" + (placed === 1 ? "" : "s") + ", shown at " + (placed === 1 ? "its field" : "their fields") + "." : a.error;
      box.appendChild(el("p", { "class": "error refused", role: "alert", text: head }));
      rest.forEach(function (e) { box.appendChild(el("p", { "class": "error", text: (e.param ? e.param + ": " : "") + e.message })); });
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
  function run(box, action, body, after, form) {
    box.innerHTML = "";
    var running = el("p", { "class": "running", text: "Running…" });
    box.appendChild(running);
    if (action === "call") {
      post("calltext", body).then(function (r) {
        if (r.ok && r.body.call_text && running.isConnected) running.textContent = r.body.call_text;
      });
    }
    return post(action, body).then(function (res) { showAnswer(box, res, form); if (after) after(res); });
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
      run(answerBox, "call", { group: toolForm.dataset.group, tool: toolForm.dataset.tool, arguments: args }, null, toolForm);
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
      start.querySelectorAll(".field-error").forEach(function (e) { e.remove(); });
      start.querySelectorAll("[aria-invalid]").forEach(function (c) { c.removeAttribute("aria-invalid"); });
      post("start", { agent: start.dataset.agent, variables: vars }).then(function (r) {
        if (!r.ok) {
          // A missing variable's error goes next to its field.
          var first = null;
          (r.body.missing || []).forEach(function (name) {
            var input = start.querySelector('[data-var="' + CSS.escape(name) + '"]');
            if (!input) return;
            var msg = el("span", { "class": "field-error", id: nextID(), text: name + " is required: the init skills need it." });
            input.parentNode.appendChild(msg);
            input.setAttribute("aria-invalid", "true");
            input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + msg.id).trim());
            if (!first) first = input;
          });
          showAnswer(answerBox, r);
          if (first) first.focus();
          return;
        }
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
      pick.disabled = !!s.closed;
      panel.querySelector(".s-move button").disabled = !!s.closed;
      var list = panel.querySelector(".s-tools");
      list.innerHTML = "";
      var tools = s.closed ? [] : (v.tools || []);
      tools.forEach(function (t) {
        var b = el("button", { type: "button", text: t.name, title: t.description });
        b.addEventListener("click", function () {
          chosen = t;
          form.hidden = false;
          answerBox.innerHTML = "";
          readArgs = buildForm(form, t);
          var first = form.querySelector(".fields input, .fields select, .fields textarea, .fields button");
          if (first) first.focus();
        });
        list.appendChild(el("li", {}, [b]));
      });
      var empty = panel.querySelector(".s-tools-empty");
      empty.hidden = tools.length > 0;
      empty.textContent = s.closed ? "The session is finished: no tool can be called any more." :
        "The state " + s.state + " lists no tools (its available_tools is empty): move to another state or finish the session.";
      if (chosen && !tools.some(function (t) { return t.object_name === chosen.object_name; })) { form.hidden = true; chosen = null; }
      var sk = panel.querySelector(".s-skills");
      sk.innerHTML = "";
      (v.skills || []).forEach(function (r) {
        var li = el("li", { "class": r.success ? "ok-run" : "failed-run" }, [
          el("span", { "class": "status " + (r.success ? "status-Ready" : "status-Error"), text: r.success ? "succeeded" : "failed" }),
          document.createTextNode(" " + (r.when === "finish" ? "At the finish: " : "At the start: ")),
          el("code", { text: r.skill }), document.createTextNode(" (" + r.group + ")")]);
        if (r.set && Object.keys(r.set).length) li.appendChild(el("div", { "class": "meta", text: "set " + Object.keys(r.set).map(function (k) { return k + " = " + JSON.stringify(r.set[k]); }).join(", ") }));
        if (r.error) li.appendChild(el("div", { "class": "error", text: (r.error.type || r.error.kind || "error") + ": " + (r.error.message || "") }));
        sk.appendChild(li);
      });
      panel.querySelector(".s-skills-empty").hidden = (v.skills || []).length > 0;
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
    run(answerBox, "session-call", { session: sid, tool: chosen.object_name, arguments: args }, refresh, form);
  });
  panel.querySelector(".s-move").addEventListener("submit", function (e) {
    e.preventDefault();
    post("state", { session: sid, state: document.getElementById("s-state-pick").value }).then(function (r) {
      // The previous state's answer and form go: its tools may be gone.
      form.hidden = true; chosen = null; answerBox.innerHTML = "";
      if (!r.ok) showAnswer(answerBox, r);
      refresh();
    });
  });
  panel.querySelector(".s-finish").addEventListener("click", function () {
    post("finish", { session: sid }).then(function (r) {
      form.hidden = true; chosen = null; answerBox.innerHTML = "";
      if (!r.ok) showAnswer(answerBox, r);
      refresh();
    });
  });
  // The page brings the session's view; later ones are asked for.
  if (panel.dataset.view) show(JSON.parse(panel.dataset.view)); else refresh();
})();
