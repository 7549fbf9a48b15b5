"""Drawing helpers for the Train page: data report, live progress, results, runs list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import Run, TextDataset, load_run
from attention_core.errors import InputError
from attention_core.runs import list_runs, run_from_zip, run_to_zip, safe_name
from attention_core.training import metrics_from_probabilities
from ui import figures
from ui.jobs import JobSnapshot
from ui.live_chart import live_plotly_chart


def data_report(dataset: TextDataset, preview: pd.DataFrame, max_tokens: int) -> None:
    r = dataset.report
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Rows kept", f"{r.rows_kept:,}", help=f"of {r.rows_read:,} read")
    c2.metric("Rows dropped", f"{sum(r.dropped.values()):,}",
              help=", ".join(f"{k}: {v}" for k, v in r.dropped.items()) or "none")
    c3.metric("Classes", len(r.class_counts))
    c4.metric("Unknown words", f"{r.unknown_rate:.1%}" if r.unknown_rate is not None else "–",
              help="share of tokens the word vectors do not know")
    for reason, count in r.dropped.items():
        st.caption(f"Dropped {count:,} row(s): {reason}.")
    for warning in r.warnings:
        st.warning(warning, icon="⚠️")
    a, b = st.columns(2)
    a.plotly_chart(figures.class_balance(r.class_counts), key="train_balance")
    b.plotly_chart(figures.length_histogram(r.token_lengths, limit=max_tokens), key="train_lengths")
    with st.expander(f"Preview ({r.source}: {r.encoding}, delimiter {r.delimiter!r})"):
        st.dataframe(preview.head(50), hide_index=True)


def progress(snap: JobSnapshot, key: str = "train") -> None:
    """The live progress line and curves of a job (redrawn 2.5 times a second).

    The curves' figure is kept in the session and only its data replaced: building it anew
    cost ~30 ms of the server's time per redraw. The chart is a :func:`live_plotly_chart`,
    updated in place in the browser, also when the job ends (a zoom survives; the browser
    does not build the chart again while it draws the results).
    """
    eta = f" · about {snap.eta_seconds:.0f} s left" if snap.eta_seconds is not None and not snap.done else ""
    label = (f"{snap.state} · epoch {snap.epoch}/{snap.epochs} · step {snap.step_in_epoch}/{snap.steps_per_epoch} · "
             f"{snap.examples_per_second:,.0f} examples/s{eta}")
    st.progress(snap.progress, text=label)
    if snap.epoch_records:
        curves = st.session_state.setdefault(f"{key}_live_curves", figures.LiveTrainingCurves())
        live_plotly_chart(curves(snap.epoch_records, snap.step_losses), key=f"{key}_live_curves_chart")


def probe_heatmap(snap: JobSnapshot, key: str = "train") -> None:
    """The probe sentence's attention after the latest recorded epoch (rebuilt when that changes)."""
    if not (snap.probe and snap.probe["sentences"]):
        return
    texts = [s["text"] for s in snap.probe["sentences"]]
    chosen = st.session_state.get(f"{key}_probe_pick")
    s = snap.probe["sentences"][texts.index(chosen) if chosen in texts else 0]
    signature = (snap.probe["epoch"], s["text"], id(snap.probe))
    cached = st.session_state.get(f"{key}_live_heatmap")
    if cached is None or cached[0] != signature:
        attn = np.asarray(s["attention"])  # (L, H, T, T)
        fig = figures.attention_heatmap(
            attn[-1].mean(0), s["tokens"],
            title=f"“{s['text']}” · last layer, head average · after epoch {snap.probe['epoch']}")
        cached = st.session_state[f"{key}_live_heatmap"] = (signature, fig.to_json(), fig.layout.height)
    live_plotly_chart(cached[1], height=cached[2], key=f"{key}_live_probe_chart")  # redrawn when the JSON changes


def results(run: Run, run_path: Path | None, probs: np.ndarray | None = None) -> None:
    """Metrics, confusion, per-class scores and misclassified rows of a run's validation share.

    ``probs``: the run's predictions for those rows, if made already (a job makes them in its
    own process); otherwise they are made here.
    """
    texts, labels = run.validation
    if texts:
        if probs is None or len(probs) != len(texts):
            probs = run.predict_proba(texts)  # one batched pass
        m = metrics_from_probabilities(probs, labels, run.label_names)
        c1, c2, c3 = st.columns(3)
        c1.metric("Validation accuracy", f"{m.accuracy:.1%}")
        c2.metric("Macro F1", f"{m.macro_f1:.3f}")
        c3.metric("Validation rows", m.n)
        a, b = st.columns(2)
        a.plotly_chart(figures.confusion_heatmap(m.confusion, m.labels), key="train_confusion")
        b.dataframe(pd.DataFrame({"class": m.labels, "precision": m.precision, "recall": m.recall, "f1": m.f1,
                                  "support": m.support}).round(3), hide_index=True)
        _misclassified(run, texts, labels, probs)
    else:
        st.info("This run had no validation share, so there are no validation metrics.")
    if run_path is not None:
        # Zipped when clicked (~50 ms and 1.3 MB for the default model), not on every redraw of the page.
        st.download_button("⬇ Download run (.zip: model, config, history)", lambda: run_to_zip(run_path),
                           file_name=f"{run_path.name}.zip", mime="application/zip", key="train_download")


def _misclassified(run: Run, texts, labels, probs: np.ndarray) -> None:
    rows = []
    for text, y, p in zip(texts, labels, probs, strict=True):
        if np.isnan(p).any():  # no known word: nothing was predicted
            continue
        if int(p.argmax()) != y:
            rows.append({"text": text, "true": run.label_names[y], "predicted": run.label_names[int(p.argmax())],
                         "confidence": round(float(p.max()), 6)})
    st.markdown(f"**Misclassified validation sentences** ({len(rows)}) — click one to inspect it")
    if not rows:
        return
    df = pd.DataFrame(rows).sort_values("confidence", ascending=False)
    event = st.dataframe(df, hide_index=True, on_select="rerun", selection_mode="single-row", key="train_miss")
    picked = event.selection.rows if event else []
    if picked:
        text = df.iloc[picked[0]]["text"]
        p = run.predict(text)
        st.plotly_chart(figures.attention_heatmap(np.asarray(p.attention)[-1].mean(0), p.tokens,
                                                  title=f"predicted {p.label} · last layer, head average"),
                        key="train_miss_heatmap")


def _run_row(path: Path) -> dict:
    """A run's line in the runs list, read again only when its files change."""
    try:
        stamp = tuple((path / f).stat().st_mtime_ns for f in ("config.json", "history.json"))
    except OSError:
        return {"run": path.name, "status": "unreadable"}
    return _read_run_row(str(path), stamp)


@st.cache_data(max_entries=512, show_spinner=False)
def _read_run_row(path: str, stamp: tuple) -> dict:
    """``stamp``: the files' modification times, so an edited run is read again. A history holds
    every step's loss and the probe sentences' attention (~0.5 MB): parsing each on every redraw
    of the page cost ~5 ms per saved run."""
    p = Path(path)
    try:
        cfg = json.loads((p / "config.json").read_text())
        hist = json.loads((p / "history.json").read_text())
        last = hist["epochs"][-1] if hist.get("epochs") else {}
        return {"run": p.name, "created": cfg.get("created", "")[:16].replace("T", " "), "status": hist.get("status"),
                "epochs": len(hist.get("epochs", [])), "val accuracy": last.get("val_accuracy"),
                "layers×heads": f"{cfg['model']['n_layers']}×{cfg['model']['n_heads']}"}
    except (OSError, KeyError, ValueError):
        return {"run": p.name, "status": "unreadable"}


def runs_manager(runs_dir: Path) -> None:
    paths = list_runs(runs_dir)
    st.caption(f"Runs are saved in `{runs_dir}` (set `ATTENTION_PLAYGROUND_RUNS` to change it).")
    upload = st.file_uploader("Upload a run (.zip from 'Download run')", type=["zip"], key="train_run_upload")
    if upload is not None and st.session_state.get("train_run_uploaded") != upload.file_id:
        try:
            target = run_from_zip(upload.getvalue(), runs_dir, Path(upload.name).stem)
            st.success(f"Uploaded run {target.name!r}.")
            paths = list_runs(runs_dir)
        except InputError as err:
            st.error(f"{err}")
        st.session_state["train_run_uploaded"] = upload.file_id
    if not paths:
        st.info("No saved runs yet: train one above.")
        return
    st.dataframe(pd.DataFrame([_run_row(p) for p in paths]), hide_index=True)
    names = [p.name for p in paths]
    c1, c2 = st.columns(2)
    with c1:
        name = st.selectbox("Run", names, key="train_manage_pick")
        a, b, c = st.columns(3)
        if a.button("Open on Home", key="train_open"):
            st.session_state["active_run"] = name
            st.switch_page("app.py")
        new = b.text_input("Rename to", key="train_rename_to", label_visibility="collapsed", placeholder="new name")
        if b.button("Rename", key="train_rename") and new.strip():
            target = runs_dir / safe_name(new)
            if target.exists():
                st.error(f"A run named {target.name!r} exists already — pick another name.")
            else:
                (runs_dir / name).rename(target)
                st.rerun()
        if c.button("Delete", key="train_delete", type="secondary"):
            st.session_state["train_confirm_delete"] = name
        if st.session_state.get("train_confirm_delete") == name:
            st.warning(f"Delete run {name!r} for good?")
            if st.button("Yes, delete it", key="train_delete_yes"):
                shutil.rmtree(runs_dir / name, ignore_errors=True)
                st.session_state.pop("train_confirm_delete")
                st.rerun()
    with c2:
        both = st.multiselect("Compare two runs", names, max_selections=2, key="train_compare")
        if len(both) == 2:
            try:
                curves = {n: [vars(e) for e in load_run(runs_dir / n).history.epochs] for n in both}
                st.plotly_chart(figures.compare_curves(curves), key="train_compare_chart")
            except InputError as err:
                st.error(f"{err}")
