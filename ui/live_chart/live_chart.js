// A plotly chart that stays mounted: each new figure from Python is drawn with Plotly.react, so
// the axes and the SVG are kept, only what changed is redrawn, and a zoom survives the update.
// (st.plotly_chart mounts a new chart whenever its figure changes.) A Streamlit v2 component
// in the page itself; plotly.js is Streamlit's copy when the page has one, else the copy in the
// plotly package, loaded once per page.

function streamlitPlotly(timeoutMs) {  // Streamlit's own plotly chunk, if a chart of its own is loading it
  return new Promise((resolve) => {
    const t0 = performance.now();
    const poll = () => {
      if (window.Plotly) resolve(window.Plotly);
      else if (!document.querySelector('[data-testid="stPlotlyChart"]') || performance.now() - t0 > timeoutMs) resolve(null);
      else setTimeout(poll, 25);
    };
    poll();
  });
}

function loadPlotly(url) {
  // One plotly.js for every live chart of the page, kept once found: a chart is always redrawn
  // by the copy that drew it, even if another copy sets window.Plotly later.
  if (!window.__livePlotlyFound) {
    window.__livePlotlyFound = findPlotly(url).then((plotly) => (window.__livePlotly = plotly), (err) => {
      window.__livePlotlyFound = null;  // try again with the next figure
      throw err;
    });
  }
  return window.__livePlotlyFound;
}

async function findPlotly(url) {
  if (window.Plotly) return window.Plotly;
  // Streamlit's bundle of plotly.js sets window.Plotly: a page with a st.plotly_chart on it has
  // it (or is loading it) already, and a second copy would cost ~1 s of the browser's time.
  const theirs = await streamlitPlotly(5000);
  if (theirs) return theirs;
  if (!window.__livePlotlyLoading) {
    window.__livePlotlyLoading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.async = true;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        window.__livePlotlyLoading = null;
        reject(new Error(`cannot load plotly.js from ${url}`));
      };
      document.head.appendChild(script);
    });
  }
  return window.__livePlotlyLoading;
}

function faded(color, alpha) {  // "#31333f" → "rgba(49, 51, 63, 0.6)": the text colour of Streamlit's own charts
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec((color || "").trim());
  return m ? `rgba(${parseInt(m[1], 16)}, ${parseInt(m[2], 16)}, ${parseInt(m[3], 16)}, ${alpha})` : undefined;
}

function themed(layout, element) {  // the app's font, text colour and background (light or dark theme)
  const css = getComputedStyle(element);
  const v = (name) => css.getPropertyValue(name).trim() || undefined;
  const background = v("--st-background-color");
  const font = { family: v("--st-font"), size: 12, color: faded(v("--st-text-color"), 0.6), ...(layout.font || {}) };
  const text = v("--st-text-color");
  const title = typeof layout.title === "object" && text  // titles in the text colour, as Streamlit's charts draw them
    ? { ...layout.title, font: { color: text, ...(layout.title.font || {}) } } : layout.title;
  return { ...layout, font, title, ...(background ? { paper_bgcolor: background, plot_bgcolor: background } : {}) };
}

function forgetRemoved() {  // charts whose element left the page: free plotly's listeners
  const live = window.__livePlotlyCharts || (window.__livePlotlyCharts = new Set());
  for (const chart of live) {
    if (!chart.isConnected) {
      chart.__resizes.disconnect();
      if (window.__livePlotly) window.__livePlotly.purge(chart);
      live.delete(chart);
    }
  }
  return live;
}

export default function ({ data, parentElement }) {
  const { spec, height, config, plotly } = data;
  if (spec === undefined) {  // preload: fetch plotly.js now or once the page is idle, so the first live chart draws at once
    const load = () => loadPlotly(new URL(plotly, document.baseURI).href).catch(() => undefined);
    if (data.at_once) load();
    else if (window.requestIdleCallback) window.requestIdleCallback(load, { timeout: 3000 });
    else setTimeout(load, 500);
    return;
  }
  let chart = parentElement.querySelector(".live-plotly-chart");
  if (!chart) {
    chart = document.createElement("div");
    chart.className = "live-plotly-chart";
    chart.dataset.updates = "0";  // how many figures it has drawn: read by the tests and benchmarks/app_latency.py
    forgetRemoved().add(chart);
    parentElement.appendChild(chart);
    let width = 0;  // the page's column can change width without the window resizing (sidebar shown or hidden)
    chart.__resizes = new ResizeObserver(() => {
      if (chart.offsetWidth !== width && chart.__drawn && window.__livePlotly) window.__livePlotly.Plots.resize(chart);
      width = chart.offsetWidth;
    });
    chart.__resizes.observe(chart);
  }
  chart.style.minHeight = `${height}px`;  // its room is kept while plotly.js loads
  chart.__pending = { spec, height, config };
  loadPlotly(new URL(plotly, document.baseURI).href).then((Plotly) => {
    const next = chart.__pending;
    if (!next || next.spec === chart.__drawn) return undefined;  // an unchanged figure costs nothing
    chart.__drawn = next.spec;
    const fig = JSON.parse(next.spec);
    const layout = themed({ ...fig.layout, height: next.height, autosize: true, uirevision: "keep" }, parentElement);
    // The downloads' names (toImageButtonOptions: ui/chart_downloads.py) follow what the chart shows, e.g. which
    // heads are off. Given to Plotly.react as a changed config they would make it build the chart anew (plotly.js
    // replots on any config change: measured 316 -> 527 ms for a knock-out's redraw); the config it gets keeps the
    // names it has, and the new ones are set where the download buttons read them (chart_downloads/svg_button.js).
    const { toImageButtonOptions: names, ...rest } = next.config || {};
    const drawn = chart._context && chart._context.toImageButtonOptions;
    const config = { responsive: true, displaylogo: false, ...rest };
    if (drawn || names) config.toImageButtonOptions = drawn || names;
    return Plotly.react(chart, fig.data, layout, config).then(() => {
      if (names) chart._context.toImageButtonOptions = names;
      chart.dataset.updates = String(Number(chart.dataset.updates) + 1);
    });
  }).catch((err) => {
    chart.textContent = `The live chart cannot be drawn: ${err.message}`;
  });
}
