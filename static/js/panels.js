// PerfHub dashboards: draw server-built Plotly figures. No inline scripts.
//
// An element with data-panels-url="<url>" fetches {"panels": [{id, wide, empty, figure}]}
// from that URL; one with data-panels-json="<id>" reads the same from the JSON <script> with
// that id (json_script). Each panel becomes a card with one chart. A point whose customdata
// is a same-site path ("/services/...") opens it when clicked (fleet: click through to the
// dossier). An element with data-figure-json="<id>" draws the one figure of that JSON <script>.
// Needs plotly.min.js loaded first (both are `defer`, in that order).
(function () {
  "use strict";

  var CONFIG = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d", "toggleSpikelines"],
  };

  function message(container, text, cls) {
    container.innerHTML = "";
    var p = document.createElement("p");
    p.className = cls || "panels-error";
    p.textContent = text;
    container.appendChild(p);
  }

  function clickThrough(plot) {
    plot.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      var target = point && point.customdata;
      if (Array.isArray(target)) { target = target[0]; }
      if (typeof target === "string" && target.charAt(0) === "/" && target.charAt(1) !== "/") {
        window.location.assign(target);
      }
    });
  }

  function heading(container, payload) {
    if (!container.hasAttribute("data-panels-heading") || !payload.heading) { return; }
    var head = document.createElement("div");
    head.className = "panels-head";
    var h = document.createElement("h2");
    h.textContent = payload.heading;
    head.appendChild(h);
    if (payload.dashboard_url) {
      var a = document.createElement("a");
      a.href = payload.dashboard_url;
      a.className = "btn btn-small";
      a.textContent = "Open the dashboard";
      head.appendChild(a);
    }
    container.appendChild(head);
  }

  function render(container, payload) {
    container.innerHTML = "";
    if (typeof window.Plotly === "undefined") {
      message(container, "Charts could not be drawn: plotly.js did not load.");
      return;
    }
    heading(container, payload);
    var grid = document.createElement("div");
    grid.className = "panels-grid";
    container.appendChild(grid);
    (payload.panels || []).forEach(function (panel) {
      var card = document.createElement("figure");
      card.className = "panel card" + (panel.wide ? " panel-wide" : "") + (panel.empty ? " panel-empty" : "");
      card.id = "panel-" + panel.id;
      var plot = document.createElement("div");
      plot.className = "panel-plot";
      card.appendChild(plot);
      if (panel.empty) {
        // Screen readers get the reason as text, not only inside the SVG.
        var why = document.createElement("figcaption");
        why.className = "visually-hidden";
        why.textContent = panel.empty;
        card.appendChild(why);
      }
      grid.appendChild(card);
      var figure = panel.figure || {};
      window.Plotly.newPlot(plot, figure.data || [], figure.layout || {}, CONFIG).then(clickThrough);
    });
  }

  function load(container) {
    var source = container.getAttribute("data-panels-json");
    if (source) {
      var script = document.getElementById(source);
      if (!script) { message(container, "Charts are missing from this page."); return; }
      try {
        render(container, JSON.parse(script.textContent));
      } catch (err) {
        message(container, "Charts could not be read: " + err.message);
      }
      return;
    }
    var url = container.getAttribute("data-panels-url");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) {
            var detail = Object.keys(body).map(function (k) { return k + ": " + body[k]; }).join("; ");
            throw new Error(detail || "HTTP " + response.status);
          }
          return body;
        }, function () { throw new Error("HTTP " + response.status); });
      })
      .then(function (payload) { render(container, payload); })
      .catch(function (err) { message(container, "Charts could not be loaded (" + err.message + ")."); });
  }

  // One figure drawn in place: an element with data-figure-json="<id>" of a JSON <script>
  // holding {data, layout} (a page's single chart: an alert's value, a sweep).
  function drawFigure(el) {
    var script = document.getElementById(el.getAttribute("data-figure-json"));
    if (!script) { message(el, "The chart is missing from this page."); return; }
    if (typeof window.Plotly === "undefined") {
      message(el, "The chart could not be drawn: plotly.js did not load.");
      return;
    }
    try {
      var figure = JSON.parse(script.textContent);
      window.Plotly.newPlot(el, figure.data || [], figure.layout || {}, CONFIG).then(clickThrough);
    } catch (err) {
      message(el, "The chart could not be read: " + err.message);
    }
  }

  function scan(root) {
    root.querySelectorAll("[data-panels-url], [data-panels-json], [data-figure-json]").forEach(function (el) {
      if (el.getAttribute("data-panels-loaded")) { return; }
      el.setAttribute("data-panels-loaded", "1");
      if (el.hasAttribute("data-figure-json")) { drawFigure(el); } else { load(el); }
    });
  }

  window.PerfHubPanels = { scan: scan };
  // Also loaded late, inside a fragment the dossier fetches: then the DOM is already there.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { scan(document); });
  } else {
    scan(document);
  }
})();
