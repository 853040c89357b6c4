// The book's own scripts (framework tabs: framework-tabs.js).
(function () {
  "use strict";

  // The page's contents ("Contents": its sections) live in a drawer on narrow
  // windows, and on laptop widths too, where course.css gives the article their
  // room. The theme (pydata-sphinx-theme 0.17 under sphinx-book-theme 1.3) opens
  // that drawer only from the first ".secondary-toggle" of the page, a button of
  // its top bar that this layout never shows: the list button the reader sees, in
  // the article's header, did nothing. It opens the drawer now, through the
  // theme's own button; choosing a section closes the drawer.
  document.addEventListener("click", function (event) {
    var drawer = document.getElementById("pst-secondary-sidebar-modal");
    if (!drawer || !event.target.closest) return;
    if (drawer.open) {
      if (event.target.closest("#pst-secondary-sidebar-modal a[href^='#']")) drawer.close();
      return;
    }
    var button = event.target.closest(".bd-header-article .secondary-toggle");
    var wired = document.querySelector(".secondary-toggle");
    if (button && wired && wired !== button) wired.click();
  });

  // Code wider than its box wraps (course.css). The rows a line wraps onto are
  // indented 4 columns deeper than the deepest line of the block that wraps, so
  // that they read as its continuation, never as a line of their own (CSS alone
  // can indent them by a fixed amount only). Worked out again whenever a block
  // is laid out anew: shown in a tab, a fold opened, the window resized.
  var HANGING = "1ch hanging each-line";
  if (!window.ResizeObserver || !window.CSS || !CSS.supports("text-indent", HANGING)) return;
  var canvas = document.createElement("canvas").getContext("2d");

  function hang(pre) {
    var style = getComputedStyle(pre);
    canvas.font = style.fontStyle + " " + style.fontWeight + " " + style.fontSize + " " + style.fontFamily;
    var ch = canvas.measureText("0000000000").width / 10;
    var room = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (!ch || room <= 0) return;
    var columns = Math.floor(room / ch + 0.01), deepest = -1;
    pre.textContent.split("\n").forEach(function (line) {
      if (line.length > columns) deepest = Math.max(deepest, line.match(/^ */)[0].length);
    });
    var indent = deepest < 0 ? "" : Math.min(deepest + 4, Math.floor(columns / 2)) + "ch hanging each-line";
    if (pre.style.textIndent !== indent) pre.style.textIndent = indent;
  }

  function start() {
    var observer = new ResizeObserver(function (entries) {
      entries.forEach(function (entry) { hang(entry.target); });
    });
    document.querySelectorAll(".bd-article pre").forEach(function (pre) { observer.observe(pre); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
