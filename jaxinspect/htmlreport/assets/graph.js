"use strict";
// jaxinspect report: the graph. Groups (functions, name scopes, runs of identical layers
// marked ×N) open in place, fusions open onto their fused computation, nodes are coloured
// on a log scale of the chosen figure, a search box finds nodes. Rows and places of each
// group's children come with the report (laid out in Python, once per distinct group);
// this script sizes the boxes and stacks the rows. Written for this report; no library.
var JaxGraph = (function () {
  var dataEl = document.getElementById("graph-data");
  var view = document.getElementById("graph-view");
  if (!dataEl || !view) return null;
  var G = JSON.parse(dataEl.textContent);
  var N = G.nodes.length, ROOT = N;
  var PAD = 10, GAPX = 16, GAPY = 28, HEAD = 22, NODE_H = 26, CELL = 12, COLS = 24;
  var AUTO_OPEN = 150;  // on load, open groups while at most this many boxes show
  var STOPS = [[238, 241, 247], [254, 229, 170], [247, 163, 72], [219, 80, 28], [122, 22, 22]];
  var open = {}, hits = {}, hitList = [], hitAt = 0, selected = null, onSelect = null;
  var metric = G.by, zoom = 1, boxes = {}, width = 0, height = 0, svg = null;

  function grp(id) { return G.groups[id - N]; }
  function up(id) {  // the group item holding id; -1 above the top
    if (id < N) return N + G.nodes[id][4];
    var p = grp(id)[3];
    return p < 0 ? -1 : N + p;
  }
  function value(id) {
    var m = G.metrics[metric];
    if (!m) return 0;
    return (id < N ? G.nodes[id][7][m.at] : grp(id)[6][m.at]) || 0;
  }
  var hottest = {};  // by metric and group: the largest node value inside
  function hot(id) {
    if (id < N) return value(id);
    var key = metric + ":" + id;
    if (hottest[key] === undefined) hottest[key] = Math.max.apply(null, [0].concat(grp(id)[5].map(hot)));
    return hottest[key];
  }
  function heat(v, max) {
    if (!v || !max) return 0;
    return Math.max(0.02, 1 + Math.log10(Math.min(1, v / max)) / G.decades);
  }
  function colour(t) {
    if (t <= 0) return "rgb(" + STOPS[0].join(",") + ")";
    var x = t * (STOPS.length - 1), i = Math.min(STOPS.length - 2, Math.floor(x)), f = x - i;
    var c = STOPS[i].map(function (a, k) { return Math.round(a + (STOPS[i + 1][k] - a) * f); });
    return "rgb(" + c.join(",") + ")";
  }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  }
  function textW(s) { return 6.6 * s.length + 18; }
  function groupTitle(id) {
    var g = grp(id), m = G.metrics[metric];
    return g[0] + (m ? " · " + fmt(value(id)) : "");
  }
  function fmt(v) {  // compact, for box captions; the details panel has the exact figures
    var units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]], m = G.metrics[metric];
    if (m && m.key === "time") {
      if (v >= 1) return v.toPrecision(3) + " s";
      if (v >= 1e-3) return (v * 1e3).toPrecision(3) + " ms";
      return (v * 1e6).toPrecision(3) + " µs";
    }
    for (var i = 0; i < units.length; i++) {
      if (v >= units[i][0]) return (v / units[i][0]).toPrecision(3) + " " + units[i][1];
    }
    return String(Math.round(v));
  }

  // ---- sizes and positions --------------------------------------------------------
  function kids(id) {
    if (id < N) {
      var body = G.bodies[G.nodes[id][5]];
      return body[0].map(function (_, k) { return -1 - k; });  // fused instructions
    }
    return grp(id)[5];
  }
  function rowsOf(id) { return id < N ? G.bodies[G.nodes[id][5]][3] : G.layouts[grp(id)[4]]; }
  function isOpen(id) { return id === ROOT || !!open[id]; }
  function size(id, sub) {
    if (id < 0) return [Math.max(44, textW(sub[0][-1 - id])), NODE_H - 4];
    if (isOpen(id)) return arrange(id).size;
    if (id < N) return [Math.max(56, textW(G.nodes[id][1]) + (G.nodes[id][5] >= 0 ? 12 : 0)), NODE_H];
    var g = grp(id), w = textW(groupTitle(id)) + 14, h = 32;
    if (g[1] === "repeat") {
      var cols = Math.min(g[2], COLS);
      w = Math.max(w, cols * CELL + 2 * PAD);
      h += Math.ceil(g[2] / cols) * CELL + 4;
    }
    return [w, h];
  }
  var arranged = {};
  function arrange(id) {  // children's sizes, then rows stacked and centred
    if (arranged[id]) return arranged[id];
    var items = kids(id), lay = rowsOf(id), sub = id < N ? G.bodies[G.nodes[id][5]] : null;
    var sizes = items.map(function (c) { return size(c, sub); });
    var rows = [];
    items.forEach(function (c, k) {
      var r = lay[k][0];
      (rows[r] = rows[r] || []).push(k);
    });
    var pos = [], y = 0, w = 0;
    rows = rows.filter(Boolean);
    rows.forEach(function (row) {
      row.sort(function (a, b) { return lay[a][1] - lay[b][1]; });
      row.width = row.reduce(function (s, k) { return s + sizes[k][0]; }, 0) + GAPX * (row.length - 1);
      row.height = Math.max.apply(null, row.map(function (k) { return sizes[k][1]; }));
      w = Math.max(w, row.width);
    });
    rows.forEach(function (row) {
      var x = (w - row.width) / 2;
      row.forEach(function (k) {
        pos[k] = [x, y + (row.height - sizes[k][1]) / 2];
        x += sizes[k][0] + GAPX;
      });
      y += row.height + GAPY;
    });
    var inner = id === ROOT ? 0 : PAD, head = id === ROOT ? 0 : HEAD;
    var res = {items: items, sizes: sizes, pos: pos, inner: inner, head: head, sub: sub,
      size: [Math.max(w, id === ROOT ? 0 : textW(label(id))) + 2 * inner,
        Math.max(0, y - GAPY) + head + inner]};
    arranged[id] = res;
    return res;
  }
  function label(id) { return id < N ? G.nodes[id][0] + " (fused)" : groupTitle(id); }

  // ---- drawing ----------------------------------------------------------------------
  function draw(id, x, y, out) {
    var s = size(id), w = s[0], h = s[1];
    boxes[id] = [x, y, w, h];
    if (isOpen(id)) return drawOpen(id, x, y, w, h, out);
    // One scale for all: a group is as hot as the hottest op inside it.
    var t = heat(hot(id), (G.metrics[metric] || {}).max), dark = t > 0.62 ? " dark" : "";
    var fill = ' style="fill:' + colour(t) + '" data-heat="' + t.toFixed(4) + '"';
    if (id < N) {
      var n = G.nodes[id], cls = "node " + esc(n[2]) + (n[6] ? " collective" : "") + dark;
      out.push('<g class="' + cls + '" data-op="' + esc(n[0]) + '" data-item="' + id +
        '" tabindex="0"><rect x="' + x + '" y="' + y + '" width="' + w + '" height="' + h +
        '" rx="4"' + fill + "/>" + (n[5] >= 0 ? toggle(x, y, "▸") : "") +
        '<text x="' + (x + w / 2 + (n[5] >= 0 ? 6 : 0)) + '" y="' + (y + h / 2 + 4) + '">' +
        esc(n[1]) + "</text><title>" + esc(n[0] + " = " + n[2] + " " + n[3] +
        (n[8] ? "\n" + n[8] : "") + (fanOut[id] > 8 ? "\nread by " + fanOut[id] + " ops" : "")) +
        "</title></g>");
      return;
    }
    var g = grp(id);
    out.push('<g class="group ' + g[1] + dark + '" data-item="' + id + '" tabindex="0"><rect x="' +
      x + '" y="' + y + '" width="' + w + '" height="' + h + '" rx="6"' + fill + "/>" +
      '<text x="' + (x + 8) + '" y="' + (y + 20) + '" class="head">▸ ' + esc(groupTitle(id)) +
      "</text><title>" + esc(g[0] + " (" + countNodes(id) + " instructions; click to open)") +
      "</title>");
    if (g[1] === "repeat") {
      g[5].forEach(function (m, k) {
        var cx = x + PAD + (k % COLS) * CELL, cy = y + 30 + Math.floor(k / COLS) * CELL;
        var tm = heat(hot(m), (G.metrics[metric] || {}).max);
        out.push('<rect class="cell" data-member="' + m + '" x="' + cx + '" y="' + cy +
          '" width="' + (CELL - 2) + '" height="' + (CELL - 2) + '" style="fill:' + colour(tm) +
          '"><title>' + esc(grp(m)[0] + " · " + fmt(value(m))) + "</title></rect>");
      });
    }
    out.push("</g>");
  }
  function toggle(x, y, glyph) {
    return '<text class="tog" x="' + (x + 9) + '" y="' + (y + 17) + '">' + glyph + "</text>";
  }
  function drawOpen(id, x, y, w, h, out) {
    var a = arrange(id);
    if (id !== ROOT) {
      var fused = id < N, cls = fused ? "node open " + esc(G.nodes[id][2]) : "group open " + grp(id)[1];
      var attr = fused ? ' data-op="' + esc(G.nodes[id][0]) + '"' : "";
      out.push('<g class="' + cls + '"' + attr + ' data-item="' + id + '" tabindex="0"><rect class="frame" x="' + x +
        '" y="' + y + '" width="' + w + '" height="' + h + '" rx="6"/><text class="head" x="' +
        (x + 8) + '" y="' + (y + 16) + '">▾ ' + esc(label(id)) + "</text></g>");
    }
    var ox = x + a.inner, oy = y + a.head;
    if (a.sub) return drawBody(a, ox, oy, out);
    a.items.forEach(function (c, k) { draw(c, ox + a.pos[k][0], oy + a.pos[k][1], out); });
  }
  function drawBody(a, ox, oy, out) {
    var body = a.sub, e = body[2];
    for (var i = 0; i < e.length; i += 2) {
      var p = a.pos[e[i]], q = a.pos[e[i + 1]], sp = a.sizes[e[i]], sq = a.sizes[e[i + 1]];
      out.push('<line class="edge" x1="' + (ox + p[0] + sp[0] / 2) + '" y1="' + (oy + p[1] + sp[1]) +
        '" x2="' + (ox + q[0] + sq[0] / 2) + '" y2="' + (oy + q[1]) + '"/>');
    }
    a.items.forEach(function (c, k) {
      var p = a.pos[k], s = a.sizes[k], j = -1 - c;
      out.push('<g class="sub"><rect x="' + (ox + p[0]) + '" y="' + (oy + p[1]) + '" width="' +
        s[0] + '" height="' + s[1] + '" rx="3"/><text x="' + (ox + p[0] + s[0] / 2) + '" y="' +
        (oy + p[1] + s[1] / 2 + 4) + '">' + esc(body[0][j]) + "</text><title>" +
        esc(body[0][j] + " " + body[1][j]) + "</title></g>");
    });
  }
  var counts = {};
  function countNodes(id) {
    if (id < N) return 1;
    if (counts[id] === undefined) {
      counts[id] = grp(id)[5].reduce(function (s, c) { return s + countNodes(c); }, 0);
    }
    return counts[id];
  }
  function shown(i) {  // the box an item is drawn in: its outermost closed group, or itself
    var rep = i;
    for (var a = up(i); a !== -1; a = up(a)) if (!isOpen(a)) rep = a;
    return rep;
  }
  var fanOut = {};  // a constant every layer reads would draw a line to every layer
  for (var f = 0; f < G.edges.length; f += 2) fanOut[G.edges[f]] = (fanOut[G.edges[f]] || 0) + 1;
  function edges(out) {
    var seen = {}, e = G.edges;
    for (var i = 0; i < e.length; i += 2) {
      if (fanOut[e[i]] > 8 && G.nodes[e[i]][2] === "constant") continue;
      var a = shown(e[i]), b = shown(e[i + 1]), key = a + "," + b;
      if (a === b || seen[key] || !boxes[a] || !boxes[b]) continue;
      seen[key] = 1;
      var p = boxes[a], q = boxes[b];
      out.push('<line class="edge" x1="' + (p[0] + p[2] / 2) + '" y1="' + (p[1] + p[3]) +
        '" x2="' + (q[0] + q[2] / 2) + '" y2="' + q[1] + '"/>');
    }
  }
  function render() {
    arranged = {}; boxes = {};
    var body = [], lines = [];
    draw(ROOT, 8, 8, body);
    var s = size(ROOT);
    width = s[0] + 16; height = s[1] + 16;
    edges(lines);
    view.innerHTML = '<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 ' +
      width + " " + height + '" width="' + width * zoom + '" height="' + height * zoom +
      '" role="img" aria-label="entry computation"><g class="edges">' + lines.join("") +
      "</g>" + body.join("") + "</svg>";
    svg = view.firstChild;
    mark();
  }
  function setZoom(k) {
    zoom = Math.min(4, Math.max(0.05, k));
    svg.setAttribute("width", width * zoom);
    svg.setAttribute("height", height * zoom);
  }
  function fit() {  // a hidden view (a folded notebook output) has no width to fit
    if (view.clientWidth) setZoom(Math.min(1, (view.clientWidth - 4) / width));
  }

  // ---- marks: selection and search hits ----------------------------------------------
  function mark() {
    var holding = {};
    hitList.forEach(function (i) { for (var a = up(i); a !== -1; a = up(a)) holding[a] = 1; });
    view.querySelectorAll("[data-item]").forEach(function (el) {
      var id = +el.getAttribute("data-item");
      el.classList.toggle("hit", !!hits[id]);
      el.classList.toggle("holds-hit", !isOpen(id) && !!holding[id]);
      el.classList.toggle("sel", id < N && G.nodes[id][0] === selected);
    });
    view.querySelectorAll("rect.cell").forEach(function (el) {
      el.classList.toggle("holds-hit", !!holding[+el.getAttribute("data-member")]);
    });
  }
  function reveal(id) {
    for (var a = up(id); a !== -1; a = up(a)) open[a] = true;
    render();
    centre(id);
  }
  function centre(id) {
    var b = boxes[shown(id)];
    if (!b) return;
    view.scrollLeft = (b[0] + b[2] / 2) * zoom - view.clientWidth / 2;
    view.scrollTop = (b[1] + Math.min(b[3], 60) / 2) * zoom - view.clientHeight / 2;
    var r = view.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight) view.scrollIntoView({block: "nearest"});
  }
  function keep(id, change) {  // open or close id without moving it on the screen
    var before = boxes[id];
    change();
    render();
    var after = boxes[id];
    if (before && after) {
      view.scrollLeft += (after[0] - before[0]) * zoom;
      view.scrollTop += (after[1] - before[1]) * zoom;
    }
  }
  var byName = {};
  G.nodes.forEach(function (n, i) { byName[n[0]] = i; });

  function search(q) {
    q = q.trim().toLowerCase();
    hits = {}; hitList = []; hitAt = 0;
    if (q) {
      G.nodes.forEach(function (n, i) {
        var hay = (n[0] + " " + n[1] + " " + n[2] + " " + n[8]).toLowerCase();
        if (hay.indexOf(q) >= 0) hitList.push(i);
      });
      hitList.sort(function (a, b) {  // the exact name first, then printed order
        return (G.nodes[b][0].toLowerCase() === q) - (G.nodes[a][0].toLowerCase() === q) || a - b;
      });
      hitList.forEach(function (i) { hits[i] = 1; });
    }
    document.getElementById("graph-hits").textContent =
      q ? hitList.length + (hitList.length === 1 ? " match" : " matches") +
        (hitList.length > 1 ? " (Enter: next)" : "") : "";
    if (hitList.length) reveal(hitList[0]); else mark();
  }
  function legend() {
    var m = G.metrics[metric], el = document.getElementById("graph-legend");
    if (!m) { el.textContent = "no figures to colour by"; return; }
    var stops = STOPS.map(function (c) { return "rgb(" + c.join(",") + ")"; }).join(",");
    el.innerHTML = '<span class="lg-bar" style="background:linear-gradient(to right,' + stops +
      ')"></span><span class="lg-ticks">' + m.ticks.map(function (t) {
        return '<span style="left:' + (t[0] * 100) + '%">' + esc(t[1]) + "</span>";
      }).join("") + "</span>";
    el.title = "colour: " + m.label + " on a log scale (" + G.decades +
      " decades); a group is coloured as the hottest op inside it, its caption is its total";
  }
  function autoOpen() {  // breadth first, repeats stay folded: a small program shows whole
    var shownCount = grp(ROOT)[5].length, queue = grp(ROOT)[5].slice();
    while (queue.length) {
      var id = queue.shift();
      if (id < N || grp(id)[1] === "repeat") continue;
      var more = grp(id)[5].length - 1;
      if (shownCount + more > AUTO_OPEN) continue;
      open[id] = true; shownCount += more;
      queue = queue.concat(grp(id)[5]);
    }
  }

  // ---- events ------------------------------------------------------------------------
  view.addEventListener("click", function (e) {
    var cell = e.target.closest("rect.cell");
    if (cell) {
      var member = +cell.getAttribute("data-member");
      open[up(member)] = true; open[member] = true;
      render(); centre(member);
      return;
    }
    var el = e.target.closest("[data-item]");
    if (!el) return;
    var id = +el.getAttribute("data-item");
    var isToggle = e.target.classList.contains("tog") || e.target.classList.contains("head");
    if (id >= N || (isToggle && G.nodes[id][5] >= 0)) {
      keep(id, function () { open[id] = !open[id]; });
    } else if (onSelect) {
      onSelect(G.nodes[id][0]);
    }
  });
  view.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    var el = e.target.closest("[data-item]");
    if (!el) return;
    var id = +el.getAttribute("data-item");
    if (id >= N) keep(id, function () { open[id] = !open[id]; });
    else if (onSelect) onSelect(G.nodes[id][0]);
  });
  var input = document.getElementById("graph-search");
  input.addEventListener("input", function () { search(input.value); });
  input.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || !hitList.length) return;
    hitAt = (hitAt + 1) % hitList.length;
    reveal(hitList[hitAt]);
  });
  document.getElementById("graph-metric").addEventListener("change", function (e) {
    metric = +e.target.value; legend(); render();
  });
  document.querySelectorAll(".zoom button").forEach(function (b) {
    b.addEventListener("click", function () {
      var f = b.getAttribute("data-zoom");
      if (b === document.getElementById("graph-fold")) { open = {}; render(); fit(); return; }
      if (f === "fit") fit(); else setZoom(f === "1" ? 1 : zoom * +f);
    });
  });

  autoOpen();
  legend();
  render();
  fit();
  return {
    // Select the node called name (from a click in the graph, a table row, a chart dot);
    // reveal: open its groups and scroll it into view.
    select: function (name, doReveal) {
      selected = name;
      if (doReveal && byName[name] !== undefined) reveal(byName[name]); else mark();
    },
    onSelect: function (f) { onSelect = f; },
  };
})();
