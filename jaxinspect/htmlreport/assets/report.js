"use strict";
// jaxinspect report: op details on click, sortable tables, search in stage texts,
// the StableHLO download. Written for this report; no library.
(function () {
  var ops = JSON.parse(document.getElementById("ops").textContent);
  var panel = document.getElementById("details");
  var body = document.getElementById("details-body");

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
    });
    body.appendChild(dl);
    panel.hidden = false;
    document.querySelectorAll(".node.sel").forEach(function (n) { n.classList.remove("sel"); });
    document.querySelectorAll('.node[data-op="' + CSS.escape(name) + '"]').forEach(
      function (n) { n.classList.add("sel"); if (reveal) centre(n); });
  }
  var view = document.getElementById("graph-view");
  var svg = view && view.querySelector("svg.graph");
  // Scroll the graph (not the page) so that node g sits in the middle of its view.
  function centre(g) {
    var box = g.getBBox(), k = svg.width.baseVal.value / svg.viewBox.baseVal.width;
    view.scrollLeft = (box.x + box.width / 2) * k - view.clientWidth / 2;
    view.scrollTop = (box.y + box.height / 2) * k - view.clientHeight / 2;
  }
  document.querySelectorAll(".zoom button").forEach(function (b) {
    b.addEventListener("click", function () {
      var f = +b.getAttribute("data-zoom"), box = svg.viewBox.baseVal;
      var k = f === 1 ? 1 : Math.min(4, Math.max(0.05, f * svg.width.baseVal.value / box.width));
      svg.setAttribute("width", box.width * k);
      svg.setAttribute("height", box.height * k);
    });
  });
  document.getElementById("close").addEventListener("click", function () { panel.hidden = true; });
  document.querySelectorAll("[data-op]").forEach(function (el) {
    // From a table row or a chart: bring the node into view; from the graph: it is in view.
    var fromGraph = el.classList.contains("node");
    el.addEventListener("click", function () { show(el.getAttribute("data-op"), !fromGraph); });
    el.addEventListener("keydown", function (e) {  // graph nodes are focusable: Tab, Enter
      if (e.key === "Enter") show(el.getAttribute("data-op"), !fromGraph);
    });
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

  document.querySelectorAll("a.download").forEach(function (a) {
    a.addEventListener("click", function () {
      var text = document.getElementById(a.getAttribute("data-pre")).textContent;
      a.href = URL.createObjectURL(new Blob([text], {type: "text/plain"}));
    });
  });
})();
