// Beside the camera of every plotly chart on the page (which saves a PNG), a second button that saves the chart as
// an SVG. plotly.js makes both files in the browser (Plotly.toImage); nothing is fetched. st.plotly_chart's
// config is JSON, and a modebar button of one's own needs a click function, so the button is added to the chart's
// toolbar here, by one observer for the whole page (the page's own charts and the live charts alike), and added
// again whenever plotly.js rebuilds a toolbar.
//
// Both buttons save the file this script makes: named and titled from the chart's config (toImageButtonOptions'
// filename and title: ui/chart_downloads.py), the title drawn on top of the chart's own in the file only, on as
// many lines as the chart's width needs; a chart without them is named after the page and its own title. The camera's click is taken before plotly.js's
// own (a listener on the chart, in the capture phase), which would save the chart untitled.

const PNG_TITLE = "Download plot as a PNG";  // plotly.js's title of its camera with the default format
const SVG_TITLE = "Download plot as an SVG";
const LINE = 34;  // px of room above the chart for the added title's first line

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

// The added title's lines: "what · model · “sentence” · …" cut between its parts (else between words) so that each line
// fits ``width`` px in ``font`` (the chart's title font, as plotly.js resolved it): a narrow chart's title stays whole.
function wrapped(text, width, font) {
  const context = (wrapped.canvas = wrapped.canvas || document.createElement("canvas")).getContext("2d");
  context.font = `${font.size || 17}px ${font.family || "sans-serif"}`;
  const fits = (line) => context.measureText(line).width <= width;
  const pieces = text.split(" · ").flatMap((part) =>  // a part too wide: its words, one by one
    (fits(part) ? [part] : part.split(" ")).map((piece, i) => ({ piece, sep: i ? " " : " · " })));
  const lines = [];
  let line = "";
  for (const { piece, sep } of pieces) {
    if (line && !fits(line + sep + piece)) {
      lines.push(line);
      line = piece;
    } else {
      line = line ? line + sep + piece : piece;
    }
  }
  return [...lines, line].filter(Boolean);
}

// The file's name (no extension), the title drawn in it, and how many lines were added above the chart's own title.
function naming(chart, width) {
  const options = (chart._context && chart._context.toImageButtonOptions) || {};
  const layoutTitle = chart.layout && chart.layout.title;
  const own = (typeof layoutTitle === "string" ? layoutTitle : layoutTitle && layoutTitle.text) || "";
  const lines = own ? own.split(/<br\s*\/?>/i) : [];
  let added = options.title || (own ? "" : `${pageName()} · Attention Playground`);
  if (added && lines.length && added.toLowerCase().includes(plainText(lines[0]).toLowerCase())) lines.shift();  // said already
  const filename = options.filename || [slug(pageName(), 30), slug(lines[0] || "chart", 60)].filter(Boolean).join("_");
  const font = (chart._fullLayout && chart._fullLayout.title && chart._fullLayout.title.font) || {};
  const addedLines = added ? wrapped(added, width - 20, font) : [];
  return { filename, text: [...addedLines, ...lines].join("<br>"), added: addedLines.length, size: font.size || 17 };
}

async function download(chart, format) {
  const Plotly = plotlyFor(chart);
  const full = chart._fullLayout || {};
  const width = full.width || chart.offsetWidth;
  const { filename, text, added, size } = naming(chart, width);
  const extra = added ? LINE + Math.ceil((added - 1) * 1.3 * size) : 0;  // a line more for each wrapped one (plotly's 1.3em)
  const height = (full.height || chart.offsetHeight) + extra;
  const layoutTitle = chart.layout.title;
  const ownPad = (typeof layoutTitle === "object" && layoutTitle.pad) || {};
  // plotly.js puts a one-line title's cap height below its top anchor, but a title of several lines' first baseline
  // on it: pushed down by the cap height (0.7em), its first line sits where a one-line title's would.
  const lift = text.includes("<br>") ? Math.round(0.7 * size) : 0;
  const title = added  // the added lines at the top of the file, over a band of their own; the chart below as drawn
    ? { ...(typeof layoutTitle === "object" ? layoutTitle : {}), text, x: 0, xanchor: "left", y: 1, yanchor: "top",
        yref: "container", pad: { ...ownPad, t: Math.max(ownPad.t || 0, 12) + lift, l: ownPad.l || 10 } }
    : layoutTitle;
  // The top margin the chart was drawn with (its axis labels' automargin included), and the band above it.
  const top = (full._size && full._size.t) || (full.margin && full.margin.t) || 0;
  const margin = { ...(chart.layout.margin || {}), t: top + extra };
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
