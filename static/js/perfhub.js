// PerfHub: small progressive enhancements; every page works without this file.
(function () {
  "use strict";

  // Scripts inserted through innerHTML never run; re-create them, in order, so a fragment
  // can bring its own chart library and the code that draws with it.
  function runScripts(container) {
    var scripts = Array.prototype.slice.call(container.querySelectorAll("script"));
    return scripts.reduce(function (previous, old) {
      return previous.then(function () {
        return new Promise(function (resolve) {
          var script = document.createElement("script");
          Array.prototype.forEach.call(old.attributes, function (attr) {
            script.setAttribute(attr.name, attr.value);
          });
          if (old.src) {
            script.onload = resolve;
            script.onerror = resolve;
          } else {
            script.textContent = old.textContent;
          }
          old.parentNode.replaceChild(script, old);
          if (!old.src) { resolve(); }
        });
      });
    }, Promise.resolve());
  }

  // Fragments other apps serve by URL (live panels, alert timeline): an element with
  // data-fragment="<url>" gets that HTML. Failures leave the element's fallback in place.
  function loadFragments(root) {
    root.querySelectorAll("[data-fragment]").forEach(function (el) {
      fetch(el.getAttribute("data-fragment"), { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html === null) { return; }
          el.innerHTML = html;
          return runScripts(el).then(markSideways);
        })
        .catch(function () { /* keep the fallback */ });
    });
  }

  // Forms marked data-confirm="..." ask before submitting (promote a baseline).
  function confirmForms(root) {
    root.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) { event.preventDefault(); }
      });
    });
  }

  // A table wider than its box scrolls sideways inside it (a .table-wrap, or on a narrow screen
  // the table itself), and on a phone nothing showed that columns were cut off. Such a box gets
  // a line above it saying how many columns are out of view, and a fade at the edge that has more.
  function sidewaysBoxes() {
    return Array.prototype.filter.call(
      document.querySelectorAll(".table-wrap, main table.data"),
      function (box) { return box.tagName !== "TABLE" || !box.parentElement.closest(".table-wrap"); }
    );
  }

  function hintFor(box) {
    var hint = box.previousElementSibling;
    if (hint && hint.classList.contains("scroll-hint")) { return hint; }
    hint = document.createElement("p");
    hint.className = "scroll-hint";
    hint.setAttribute("aria-hidden", "true");  // a table read aloud has no sides
    box.parentNode.insertBefore(hint, box);
    return hint;
  }

  function showSideways(box) {
    var wide = box.scrollWidth > box.clientWidth + 1;
    var hint = box.previousElementSibling;
    box.classList.toggle("scrolls-sideways", wide);
    if (!wide) {
      if (hint && hint.classList.contains("scroll-hint")) { hint.hidden = true; }
      return;
    }
    var edges = box.getBoundingClientRect();
    var row = box.querySelector("thead tr") || box.querySelector("tr");
    var cells = row ? Array.prototype.slice.call(row.children) : [];
    var right = cells.filter(function (c) { return c.getBoundingClientRect().right > edges.right + 1; });
    var left = cells.filter(function (c) { return c.getBoundingClientRect().left < edges.left - 1; });
    box.classList.toggle("more-right", right.length > 0);
    hint = hintFor(box);
    hint.hidden = false;
    hint.textContent = right.length
      ? "Scroll sideways: " + right.length + " more column" + (right.length > 1 ? "s" : "") + " →"
      : "← Scroll back: " + left.length + " column" + (left.length > 1 ? "s" : "") + " to the left";
  }

  function markSideways() {
    sidewaysBoxes().forEach(function (box) {
      if (!box.hasAttribute("data-sideways")) {
        box.setAttribute("data-sideways", "");
        box.addEventListener("scroll", function () { showSideways(box); }, { passive: true });
      }
      showSideways(box);
    });
  }

  function markSidewaysOnResize() {
    var queued = false;
    window.addEventListener("resize", function () {
      if (queued) { return; }
      queued = true;
      window.requestAnimationFrame(function () { queued = false; markSideways(); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    loadFragments(document);
    confirmForms(document);
    markSideways();
    markSidewaysOnResize();
  });
})();
