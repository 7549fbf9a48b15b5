// Beside the camera of every plotly chart on the page (which saves a PNG), a second button that saves the chart as
// an SVG. plotly.js makes both files in the browser (Plotly.toImage); nothing is fetched. st.plotly_chart's
// config is JSON, and a modebar button of one's own needs a click function, so the button is added to the chart's
// toolbar here, by one observer for the whole page (the page's own charts and the live charts alike), and added
// again whenever plotly.js rebuilds a toolbar.
//
// Both buttons save the file this script makes: named and titled from the chart's config (toImageButtonOptions'
// filename and title: ui/chart_downloads.py), the title drawn on top of the chart's own in the file only; a
// chart without them is named after the page and its own title. The camera's click is taken before plotly.js's
// own (a listener on the chart, in the capture phase), which would save the chart untitled.

const PNG_TITLE = "Download plot as a PNG";  // plotly.js's title of its camera with the default format
const SVG_TITLE = "Download plot as an SVG";
const LINE = 34;  // px of room above the chart for the added title line

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

function plainText(html) {
  const div = document.createElement("div");
  div.innerHTML = html || "";
  return div.textContent.trim();
}

function slug(text, limit) {  // as attention_core.text.file_stem
  return plainText(text).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+/, "").slice(0, limit).replace(/-+$/, "");
}

function pageName() {  // "Inspect" from "Inspect · Attention Playground"
  return document.title.split(" · ")[0].trim() || "Attention Playground";
}

// The file's name (no extension), the title drawn in it, and whether a line was added above the chart's own title.
function naming(chart) {
  const options = (chart._context && chart._context.toImageButtonOptions) || {};
  const layoutTitle = chart.layout && chart.layout.title;
  const own = (typeof layoutTitle === "string" ? layoutTitle : layoutTitle && layoutTitle.text) || "";
  const lines = own ? own.split(/<br\s*\/?>/i) : [];
  let added = options.title || (own ? "" : `${pageName()} · Attention Playground`);
  if (added && lines.length && added.toLowerCase().includes(plainText(lines[0]).toLowerCase())) lines.shift();  // said already
  const filename = options.filename || [slug(pageName(), 30), slug(lines[0] || "chart", 60)].filter(Boolean).join("_");
  return { filename, text: [added, ...lines].filter(Boolean).join("<br>"), added: Boolean(added) };
}

async function download(chart, format) {
  const Plotly = plotlyFor(chart);
  const { filename, text, added } = naming(chart);
  const full = chart._fullLayout || {};
  const extra = added ? LINE : 0;
  const width = full.width || chart.offsetWidth;
  const height = (full.height || chart.offsetHeight) + extra;
  const layoutTitle = chart.layout.title;
  const ownPad = (typeof layoutTitle === "object" && layoutTitle.pad) || {};
  const title = added  // the added line at the top of the file, over a band of its own; the chart below as drawn
    ? { ...(typeof layoutTitle === "object" ? layoutTitle : {}), text, x: 0, xanchor: "left", y: 1, yanchor: "top",
        yref: "container", pad: { ...ownPad, t: (ownPad.t || 0) + 12, l: ownPad.l || 10 } }  // (a title of several lines
    : layoutTitle;                                                                           // rises a little above its anchor)
  const margin = { ...(chart.layout.margin || {}), t: ((full.margin && full.margin.t) || 0) + extra };
  const layout = { ...chart.layout, title, margin, width, height };
  const url = await Plotly.toImage({ data: chart.data, layout }, { format, width, height });
  const link = document.createElement("a");
  link.href = url;
  link.download = `${filename}.${format}`;
  document.body.appendChild(link);
  link.click();
  link.remove();
}

function saved(chart, format) {
  download(chart, format).catch((err) => console.error(`The chart cannot be saved as ${format}:`, err));
}

function addTo(chart) {
  if (!chart.__downloadsNamed) {  // the camera: this file, not plotly.js's untitled one
    chart.__downloadsNamed = true;
    chart.addEventListener("click", (event) => {
      const camera = event.target.closest && event.target.closest(`.modebar-btn[data-title="${PNG_TITLE}"]`);
      if (!camera || !chart.contains(camera)) return;
      event.stopPropagation();
      event.preventDefault();
      saved(chart, "png");
    }, true);
  }
  const png = chart.querySelector(`.modebar-btn[data-title="${PNG_TITLE}"]`);
  if (!png || png.parentElement.querySelector(`[data-title="${SVG_TITLE}"]`)) return;
  const svg = png.cloneNode(true);  // plotly's look and tooltip; a clone has none of the camera's listeners
  svg.setAttribute("data-title", SVG_TITLE);
  svg.setAttribute("aria-label", SVG_TITLE);
  svgIcon(svg, plotlyFor(chart));
  svg.addEventListener("click", () => saved(chart, "svg"));
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
