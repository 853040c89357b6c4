// Framework tabs: each run of adjacent notebook cells tagged "tensorflow" and
// "pytorch" becomes one "TensorFlow | PyTorch" tab set. The reader sees the very
// cells that ran, with their stored outputs. The choice is synchronised across
// every tab set on the page, including sphinx-design tab-sets of the sync group
// "framework" (used for source listings), and persists across pages (localStorage).
(function () {
  "use strict";
  var KEY = "course-framework";
  var SD_KEY = "sphinx-design-tab-id-framework";  // sphinx-design's own key for the group
  var FRAMEWORKS = [["tensorflow", "TensorFlow"], ["pytorch", "PyTorch"]];

  function frameworkOf(cell) {
    for (var i = 0; i < FRAMEWORKS.length; i++) {
      if (cell.classList.contains("tag_" + FRAMEWORKS[i][0])) return FRAMEWORKS[i][0];
    }
    return null;
  }

  function stored() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }
  }

  function choose(framework) {
    try {
      window.localStorage.setItem(KEY, framework);
      window.localStorage.setItem(SD_KEY, framework);
    } catch (e) { /* private mode: the choice lasts for this page only */ }
    document.querySelectorAll('label[data-sync-group="framework"]').forEach(function (label) {
      var input = document.getElementById(label.htmlFor);
      if (input && label.dataset.syncId === framework) input.checked = true;
    });
    document.querySelectorAll(".framework-tabs").forEach(function (set) {
      set.querySelectorAll(".framework-tab-button").forEach(function (button) {
        var on = button.dataset.framework === framework;
        button.classList.toggle("active", on);
        button.setAttribute("aria-selected", on ? "true" : "false");
      });
      set.querySelectorAll(".framework-tab-panel").forEach(function (panel) {
        panel.hidden = panel.dataset.framework !== framework;
      });
    });
    document.documentElement.dataset.framework = framework;
  }

  function build() {
    var cells = Array.prototype.slice.call(document.querySelectorAll("div.cell"));
    var groups = [], current = null;
    cells.forEach(function (cell) {
      var framework = frameworkOf(cell);
      var adjacent = current && current.last.nextElementSibling === cell;
      if (!framework) { current = null; return; }
      if (!adjacent || current.frameworks.indexOf(framework) !== -1) {
        current = { cells: [], frameworks: [], last: null };
        groups.push(current);
      }
      current.cells.push(cell);
      current.frameworks.push(framework);
      current.last = cell;
    });
    groups.forEach(function (group) {
      var set = document.createElement("div");
      set.className = "framework-tabs";
      var bar = document.createElement("div");
      bar.className = "framework-tab-bar";
      bar.setAttribute("role", "tablist");
      set.appendChild(bar);
      group.cells[0].parentNode.insertBefore(set, group.cells[0]);
      FRAMEWORKS.forEach(function (fw) {
        var index = group.frameworks.indexOf(fw[0]);
        if (index === -1) return;
        var button = document.createElement("button");
        button.type = "button";
        button.className = "framework-tab-button";
        button.dataset.framework = fw[0];
        button.setAttribute("role", "tab");
        button.textContent = fw[1];
        button.addEventListener("click", function () { choose(fw[0]); });
        bar.appendChild(button);
        var panel = document.createElement("div");
        panel.className = "framework-tab-panel";
        panel.dataset.framework = fw[0];
        panel.setAttribute("role", "tabpanel");
        panel.appendChild(group.cells[index]);
        set.appendChild(panel);
      });
    });
    document.querySelectorAll('label[data-sync-group="framework"]').forEach(function (label) {
      label.addEventListener("click", function () { choose(label.dataset.syncId); });
    });
    choose(stored() || "pytorch");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", build);
  } else {
    build();
  }
})();
