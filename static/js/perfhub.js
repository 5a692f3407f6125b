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
          return runScripts(el);
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

  document.addEventListener("DOMContentLoaded", function () {
    loadFragments(document);
    confirmForms(document);
  });
})();
