// Beside the camera of every plotly chart on the page (which saves a PNG), a second button that saves the chart as
// an SVG. plotly.js makes both files in the browser (Plotly.downloadImage); nothing is fetched. st.plotly_chart's
// config is JSON, and a modebar button of one's own needs a click function, so the button is added to the chart's
// toolbar here, by one observer for the whole page (the page's own charts and the live charts alike), and added
// again whenever plotly.js rebuilds a toolbar.

const PNG_TITLE = "Download plot as a PNG";  // plotly.js's title of its camera with the default format
const SVG_TITLE = "Download plot as an SVG";

function plotlyFor(chart) {  // the plotly.js that drew the chart: Streamlit's, or the live charts' copy
  return chart.classList.contains("live-plotly-chart") ? window.__livePlotly || window.Plotly : window.Plotly;
}

function svgIcon(camera, Plotly) {  // plotly's "camera-retro" glyph, drawn as plotly draws its own icons
  const glyph = Plotly && Plotly.Icons && Plotly.Icons["camera-retro"];
  const path = camera.querySelector("path");
  if (glyph && path) {
    path.setAttribute("d", glyph.path);
    path.setAttribute("transform", glyph.transform);
    camera.querySelector("svg").setAttribute("viewBox", `0 0 ${glyph.width} ${glyph.height}`);
  }
}

function addTo(chart) {
  const png = chart.querySelector(`.modebar-btn[data-title="${PNG_TITLE}"]`);
  if (!png || png.parentElement.querySelector(`[data-title="${SVG_TITLE}"]`)) return;
  const svg = png.cloneNode(true);  // plotly's look and tooltip; a clone has none of the camera's listeners
  svg.setAttribute("data-title", SVG_TITLE);
  svg.setAttribute("aria-label", SVG_TITLE);
  svgIcon(svg, plotlyFor(chart));
  svg.addEventListener("click", () => {
    const options = (chart._context && chart._context.toImageButtonOptions) || {};
    plotlyFor(chart).downloadImage(chart, { format: "svg", filename: options.filename || "newplot" });
  });
  png.after(svg);
}

function addToAll() {
  window.__svgButtonsQueued = false;
  document.querySelectorAll(".js-plotly-plot").forEach(addTo);
}

export default function ({ parentElement }) {
  // This element draws nothing: without this its empty row would push the page down by the gap between elements.
  const row = parentElement.closest('[data-testid="stElementContainer"]');
  if (row) row.style.display = "none";
  if (window.__svgButtons) return;  // one observer per page, however many page runs mount this
  window.__svgButtons = new MutationObserver(() => {
    if (!window.__svgButtonsQueued) {  // many changes at once: one look at the charts per frame
      window.__svgButtonsQueued = true;
      requestAnimationFrame(addToAll);
    }
  });
  window.__svgButtons.observe(document.body, { childList: true, subtree: true });
  addToAll();
}
