// A link to one experiment (#experiment-12, from the timeline) opens its collapsed card.
(function () {
  "use strict";
  function openTarget() {
    var target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    var card = target && target.querySelector(":scope > details");
    if (card) { card.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("DOMContentLoaded", openTarget);
})();
