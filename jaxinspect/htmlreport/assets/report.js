"use strict";
// jaxinspect report: op details on click (with the source in context), sortable tables,
// search in stage texts, the StableHLO download, chart tooltips. The graph is graph.js.
// Written for this report; no library.
(function () {
  var ops = JSON.parse(document.getElementById("ops").textContent);
  var panel = document.getElementById("details");
  var body = document.getElementById("details-body");

  var sources = JSON.parse(document.getElementById("sources").textContent);

  function show(name, reveal) {
    var op = ops[name];
    if (!op) return;
    var rows = [["instruction", name], ["opcode", op.opcode], ["shape", op.shape],
      ["jaxpr equation", op.jaxpr || "(none: made by XLA)"],
      ["source line", op.source || "(no source line)"]];
    if (op.flops) rows.push(["FLOPs", op.flops]);
    if (op.inside) rows.push(["FLOPs inside", op.inside]);
    if (op.bytes) rows.push(["bytes", op.bytes]);
    if (op.measured) rows.push(["measured", op.measured]);
    body.innerHTML = "";
    var dl = document.createElement("dl");
    rows.forEach(function (r) {
      var dt = document.createElement("dt"); dt.textContent = r[0];
      var dd = document.createElement("dd"); dd.textContent = r[1];
      dd.className = "f-" + r[0].replace(/ /g, "-");
      dl.appendChild(dt); dl.appendChild(dd);
      if (r[0] === "source line") dl.appendChild(context(sources.stacks[op.stack] || []));
    });
    body.appendChild(dl);
    panel.hidden = false;
    if (window.JaxGraph) JaxGraph.select(name, reveal);
  }

  // ---- source in context: the user's line with the lines around it, then the frames
  // of the user's code that called it (read when the report was built) ----
  function frameKey(label) { return label.slice(0, label.lastIndexOf(" ")); }
  function context(stack) {
    var dd = document.createElement("dd");
    dd.className = "f-context";
    stack.forEach(function (label, k) {
      var found = sources.lines[frameKey(label)];
      var head = document.createElement("div");
      head.className = "frame";
      head.textContent = (k === 0 ? "" : "called from ") + label;
      if (k > 0) dd.appendChild(head);
      if (!found) return;
      var pre = document.createElement("pre");
      pre.className = "code";
      found[2].forEach(function (text, i) {
        var line = document.createElement("span");
        var n = found[0] + i;
        line.className = n === found[1] ? "ln at" : "ln";
        line.textContent = String(n).padStart(5) + "  " + text + "\n";
        pre.appendChild(line);
      });
      dd.appendChild(pre);
    });
    return dd;
  }

  document.getElementById("close").addEventListener("click", function () { panel.hidden = true; });
  if (window.JaxGraph) JaxGraph.onSelect(function (name) { show(name, false); });
  document.querySelectorAll("[data-op]").forEach(function (el) {
    // A table row or a chart dot: show the op and bring its node into view.
    if (el.closest("#graph-view")) return;  // the graph handles its own clicks
    el.addEventListener("click", function () { show(el.getAttribute("data-op"), true); });
  });

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th) {
      th.addEventListener("click", function () {
        var col = +th.getAttribute("data-col");
        var down = th.getAttribute("data-dir") !== "down";
        th.setAttribute("data-dir", down ? "down" : "up");
        var tbody = table.tBodies[0];
        var rows = Array.prototype.slice.call(tbody.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          // No value (an op XLA does not count): last whichever way the column is sorted.
          if (x === "" || y === "") return (x === "") - (y === "");
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
          return down ? -c : c;
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
      });
    });
  });

  document.querySelectorAll("input.search").forEach(function (input) {
    input.addEventListener("input", function () {
      var pre = document.getElementById(input.getAttribute("data-pre"));
      var q = input.value, hits = 0, first = null;
      pre.querySelectorAll(".ln").forEach(function (ln) {
        var on = q.length > 0 && ln.textContent.indexOf(q) >= 0;
        ln.classList.toggle("hit", on);
        if (on) { hits += 1; if (!first) first = ln; }
      });
      input.parentNode.querySelector(".hits").textContent = q ? hits + " lines" : "";
      if (first) pre.scrollTop = first.offsetTop - pre.offsetTop;
    });
  });

  // ---- charts: a point names its op as the pointer reaches it (a tooltip of our own: the
  // browser's title tooltip comes late and not at all on touch) ----
  var tip = document.createElement("div");
  tip.id = "tip"; tip.hidden = true;
  document.body.appendChild(tip);
  document.querySelectorAll("svg.chart .dot, svg.chart .bar").forEach(function (el) {
    var title = el.querySelector("title");
    if (!title) return;
    el.addEventListener("mouseenter", function () {
      var r = el.getBoundingClientRect();
      tip.textContent = title.textContent;
      tip.style.left = (r.right + window.scrollX + 8) + "px";
      tip.style.top = (r.top + window.scrollY - 6) + "px";
      tip.hidden = false;
      el.classList.add("on");
    });
    el.addEventListener("mouseleave", function () { tip.hidden = true; el.classList.remove("on"); });
  });

  document.querySelectorAll("a.download").forEach(function (a) {
    a.addEventListener("click", function () {
      var text = document.getElementById(a.getAttribute("data-pre")).textContent;
      a.href = URL.createObjectURL(new Blob([text], {type: "text/plain"}));
    });
  });
})();
