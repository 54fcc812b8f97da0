"use strict";
// jaxinspect notebook summary: one summary's graph, kept to its own elements. A notebook
// page can hold several summaries (and the same one re-run): this script finds its own
// root from the script element running it, and graph.js (the report's graph, pasted in
// below by summary.py) reads "document" through a lookup that adds this summary's id
// prefix, so nothing here touches another summary or the notebook's page.
(function () {
  var UID = __UID__;
  var here = document.currentScript;
  var root = (here && here.closest("#" + UID)) || document.getElementById(UID);
  if (!root) return;
  var scoped = {
    getElementById: function (id) { return root.querySelector("#" + UID + "-" + id); },
    querySelector: function (s) { return root.querySelector(s); },
    querySelectorAll: function (s) { return root.querySelectorAll(s); },
    createElement: function (t) { return document.createElement(t); },
  };
  var shown = root.querySelector(".jxs-clicked");
  function start(tries) {
    // JupyterLab may run an output's script before the output is in the page: the graph
    // is sized from the page, so wait for it.
    if (!root.isConnected) {
      if (tries < 200) setTimeout(function () { start(tries + 1); }, 50);
      return;
    }
    var graph = (function (document) {
      /*GRAPH_JS*/
      return JaxGraph;
    })(scoped);
    if (!graph) return;
    var nodes = {};
    JSON.parse(scoped.getElementById("graph-data").textContent).nodes.forEach(function (n) {
      nodes[n[0]] = n;
    });
    graph.onSelect(function (name) {
      var n = nodes[name];
      graph.select(name, false);
      shown.textContent = n[0] + " = " + n[2] + " " + n[3] + (n[8] ? " · " + n[8] : "");
    });
  }
  start(0);
})();
