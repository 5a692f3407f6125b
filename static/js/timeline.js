// The dossier timeline's filters: each checkbox shows or hides the entries of its group
// (alerts, deploys and config, experiments, gate runs, steps). Loaded with the fragment; the
// listener is delegated, so a fragment loaded again needs nothing more.
(function () {
  "use strict";
  if (window.perfhubTimelineFilters) { return; }
  window.perfhubTimelineFilters = true;
  document.addEventListener("change", function (event) {
    var box = event.target;
    var filters = box.closest && box.closest("[data-timeline-filters]");
    if (!filters) { return; }
    var list = filters.parentNode.querySelector("ol.timeline");
    var shown = {};
    filters.querySelectorAll("input[type=checkbox]").forEach(function (input) {
      shown[input.value] = input.checked;
    });
    list.querySelectorAll("li[data-group]").forEach(function (item) {
      item.hidden = shown[item.getAttribute("data-group")] === false;
    });
  });
})();
