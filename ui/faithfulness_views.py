"""The Faithfulness page's blocks: one sentence's lab, head knock-out, the whole run's report.

The numbers come from :mod:`attention_core.faithfulness`; the charts from
:mod:`ui.faithfulness_figures`. ``pages/7_Faithfulness.py`` places the blocks.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import Run
from attention_core.errors import ConfigError, InputError
from attention_core.faithfulness import (
    WHAT_IT_MEANS,
    Progress,
    RunReport,
    SentenceLab,
    available_methods,
    knock_out,
    run_report,
    sentence_lab,
)
from attention_core.map_names import head_name, head_names, map_words, parse_heads
from attention_core.model import ModelConfig
from attention_core.run_folders import run_stamp
from ui import chart_downloads, figures, state, view_link
from ui import faithfulness_figures as figs
from ui.live_chart import live_plotly_chart
from ui.markup import token_chips
from ui.state import kept

MODES = {
    "zero": "Remove its output",
    "uniform": "Make its attention uniform",
}
MODE_TEACHES = {
    "zero": "The head's weights become 0, so the layer goes on with the other heads alone: does the model need "
            "what this head passes on at all?",
    "uniform": "The head still passes on an average of the sentence, but no longer chooses where to look: does the "
               "model need *where* this head looks, or only that it passes something on?",
}
KNOCKED_OUT = {"zero": "output removed", "uniform": "attention uniform"}  # a knock-out, in a chart's downloads
REPORTS_KEPT = 8  # whole-run reports kept by the server (each a few KB)
TABS = {"sentence": "One sentence", "heads": "Head knock-out", "run": "The whole run"}  # the address's tab → its label


def method_count(run: Run) -> int:
    """How many importance methods the run's model has (a pooling attention is one more)."""
    return len(available_methods(run.model))

def view_params(run: Run, default_text: str) -> list[view_link.Param]:
    """What defines the page's view in the address: sentence, tab, off (the heads switched off, e.g.
    1.2,pooling.1; a pooling head's number, 3.1 after 2 layers, is read too) and mode (zero | uniform)."""
    cfg = run.model_config
    heads = head_names(cfg)

    def parse_off(text: str) -> list[str]:
        try:
            off = parse_heads(text, cfg)
        except ConfigError as err:
            raise view_link.BadParam(err.message, err.hint) from None
        if not off:
            raise view_link.BadParam("no head given", f"name heads as in the list, e.g. off=1.2,{heads[-1]}")
        return [head_name(*hd, cfg) for hd in off]

    return [
        view_link.text("sentence", "faith_text", default_text),
        view_link.choice("tab", "faith_tab", TABS, "sentence"),
        view_link.Param("off", lambda: [n for n in st.session_state.get("faith_heads", []) if n in heads],
                        lambda names: st.session_state.__setitem__("faith_heads", list(names)), parse_off, ",".join, []),
        view_link.choice("mode", "faith_mode", {m: m for m in MODES}, "zero", what="mode"),
    ]


# --- one sentence ---------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Scoring every word with every method…", max_entries=64)
def _lab(_run: Run, stamp: tuple, text: str) -> SentenceLab:
    """:func:`sentence_lab` of ``text``, once per run (``stamp``: its :func:`run_stamp`) and sentence."""
    return sentence_lab(_run.model, _run.encoder, _run.label_names, text)


def lab(run: Run, path: Path, text: str) -> SentenceLab:
    """The sentence's lab; stops the page with the error (what is wrong, how to fix it) if it has none."""
    try:
        return _lab(run, run_stamp(path), text)
    except InputError as err:
        st.error(f"{err}")
        st.stop()
        raise  # st.stop raises; this line is for the type checker


def prediction_line(lab: SentenceLab) -> None:
    """The predicted class and the tokens read, in one line each."""
    p = lab.probabilities[lab.label]
    st.markdown(f"Prediction: **{lab.label}** ({p:.1%}) · the curves below follow this probability.")
    st.markdown(token_chips(lab.tokens))
    for note in lab.notes:
        st.caption(note)


def token_importance(lab: SentenceLab, *, model: str) -> None:
    """Every method's score of every word, each row scaled to its largest, and what each measures (``model``: the
    run's name, in the chart's downloads, as below)."""
    st.subheader("Which words matter, by each method")
    st.caption("One row per method, on the same words. Each row is divided by its own largest score, so rows compare "
               "by their pattern, not their size (hover for the raw number). Red pushes towards the predicted class, "
               "blue against it.")
    st.plotly_chart(figs.method_scores(lab.tokens, lab.scores, lab.titles), key="faith_scores",
                    config=chart_downloads.config("Word importance by method", model=model, sentence=lab.text))
    st.markdown("\n".join(f"- **{lab.titles[m]}**: {lab.measures[m]}" for m in lab.methods))
    if lab.shapley:
        st.caption(f"Shapley values of this sentence: {lab.shapley}.")


def agreement(lab: SentenceLab, *, model: str) -> None:
    """The Kendall τ matrix between the methods."""
    st.subheader("Do the methods agree?")
    st.caption("Kendall's τ between two methods' rankings of the words: 1 = the same order, 0 = unrelated, "
               "−1 = reversed. Blank where a method gives every word the same score.")
    st.plotly_chart(figs.kendall_matrix(lab.kendall, lab.methods, lab.titles), key="faith_kendall",
                    config=chart_downloads.config("Agreement of the methods", model=model, sentence=lab.text))


def curves_and_eraser(lab: SentenceLab, *, model: str) -> None:
    """Deletion and insertion curves, and ERASER's comprehensiveness and sufficiency per method."""
    st.subheader("Does the model depend on those words? Erase them")
    st.caption("Remove each method's top k words (left), or keep only them (right), and watch the probability of "
               f"**{lab.label}**. A faithful ranking makes the left curve fall and the right one rise faster than the "
               "random order (dashed). Methods that rank the words alike draw the same line: click a name in the legend "
               "to hide it.")
    st.plotly_chart(figs.erasure_curves(lab.deletion, lab.insertion, lab.titles, lab.label), key="faith_curves",
                    config=chart_downloads.config("Erasing the top words", model=model, sentence=lab.text,
                                                  detail=f"p({lab.label})"))
    st.dataframe(eraser_table(lab.comprehensiveness, lab.sufficiency, lab.titles))


def eraser_table(comprehensiveness: dict[str, float], sufficiency: dict[str, float], titles: dict[str, str]) -> pd.DataFrame:
    """Per method and the random order: ERASER's comprehensiveness (higher = more faithful) and sufficiency (lower)."""
    rows = [{"method": figs.method_title(name, titles), "comprehensiveness ↑": value, "sufficiency ↓": sufficiency[name]}
            for name, value in comprehensiveness.items()]
    return pd.DataFrame(rows).set_index("method").round(4)


# --- head knock-out -----------------------------------------------------------------------------------


@st.fragment
def knock_out_lab(run: Run, text: str) -> None:
    """Pick heads to switch off and a way to do it; the prediction and every map redraw at once
    (a fragment: only this block reruns; its charts are updated in place, ``ui.live_chart``)."""
    cfg = run.model_config
    heads = head_names(cfg)
    pooling = cfg.n_attention_maps > cfg.n_layers
    left, right = st.columns([2, 1], gap="large")
    chosen = left.multiselect("Heads to switch off (layer.head)", heads, key="faith_heads",
                              help="1.2 is layer 1's head 2" + (f"; {heads[-cfg.n_heads]} is the pooling attention's "
                                                               "head 1" if pooling else ""))
    mode = right.radio("How", list(MODES), format_func=MODES.get, **kept("faith_mode", "zero", list(MODES)))
    st.caption(MODE_TEACHES[mode])
    view_link.refresh()  # a rerun of this fragment alone: the page's address follows the heads and the mode
    off = parse_heads(",".join(chosen), cfg)
    plain = run.predict(text)
    edited = run.predict(text, edit_attention=knock_out(off, cfg, mode)) if off else plain
    knocked = f"{', '.join(chosen)} off, {KNOCKED_OUT[mode]}" if off else "no head off"  # in the downloads
    a, b = st.columns(2, gap="large")
    with a:
        st.markdown(f"**All heads on**: {plain.label}")
        live_plotly_chart(figures.probability_bars(plain.probabilities, predicted=plain.label), key="faith_plain_probs",
                          config=chart_downloads.config("Probabilities", model=run.name, sentence=text,
                                                        detail="all heads on"))
    with b:
        title = f"**{', '.join(chosen)} off**" if off else "**No head off** (the same model)"
        flipped = " · :red[the prediction changed]" if edited.label != plain.label else ""
        st.markdown(f"{title}: {edited.label}{flipped}")
        live_plotly_chart(figures.probability_bars(edited.probabilities, predicted=edited.label), key="faith_ko_probs",
                          config=chart_downloads.config("Probabilities", model=run.name, sentence=text, detail=knocked))
    change = max(abs(edited.probabilities[k] - plain.probabilities[k]) for k in plain.probabilities)
    framed = " (framed in red)" if cfg.n_heads + 1 > figures.WIDE_GRID else ""
    st.caption(f"The largest change in a class's probability: {change:.1%}. Below, every map with those heads "
               f"off{framed}: a head switched off in an early layer changes what the later layers see, so their maps "
               "move too.")
    live_plotly_chart(figs.knocked_out_grid(np.asarray(edited.attention), edited.tokens, off,
                                           pooling=cfg.pooling == "attention"), key="faith_ko_grid",
                      config=chart_downloads.config("Attention, every layer and head", model=run.name, sentence=text,
                                                    detail=knocked))


# --- the whole run ------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _reports() -> tuple[OrderedDict, threading.Lock]:
    """The server's finished reports, keyed by (run_stamp, mode, sentences, seed), the newest last.

    A store rather than a cached function: the progress bar is drawn while the report runs, and a
    cached function replays the elements it drew (a bar outside it cannot be replayed)."""
    return OrderedDict(), threading.Lock()


def cached_report(path: Path, mode: str, n: int, seed: int = 0) -> RunReport | None:
    """The report already made for this run and these arguments, or None."""
    store, lock = _reports()
    with lock:
        return store.get((run_stamp(path), mode, n, seed))


class ReportTimer:
    """The progress bar's words for a report as it runs: how far each step has got and, once some of it is
    done, the time it has left on this machine at its present speed (that step's pace so far, extrapolated).

    ``clock`` is injectable for tests; each :class:`Progress` is timed when it arrives. A step starts when the
    one before it ended (its first progress comes after its first pass)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = self.last = clock()
        self.stage: str | None = None
        self.stage_started = self.started

    def text(self, p: Progress) -> str:
        now = self.clock()
        if p.stage != self.stage:
            self.stage, self.stage_started = p.stage, self.last
        self.last = now
        what = "knock-out passes over the sentences" if p.stage == "heads" else "sentences scored by every method"
        words = f"{p.done:,} of {p.total:,} {what}"
        if 0 < p.done < p.total:
            left = (now - self.stage_started) / p.done * (p.total - p.done)
            words += f", about {_seconds(left)} left" + (" for them, then the sentences" if p.stage == "heads" else "")
        return words

    def seconds(self) -> float:
        return self.clock() - self.started


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"


@st.cache_resource(show_spinner=False)
def last_report_pace() -> dict[str, float]:
    """The last report this server made: its sentences and seconds (the next one's estimate before it starts)."""
    return {}


def report_estimate(n: int, pace: dict[str, float]) -> str:
    """What the page says before a report of ``n`` sentences runs: the time the last one here took, scaled to
    ``n``, or that the time left shows as it runs; no time promised that this machine did not measure."""
    if not pace:
        return "The time it has left is shown as it runs, measured on this machine."
    scaled = pace["seconds"] * n / pace["sentences"]
    return (f"The last report on this server took {_seconds(pace['seconds'])} for {pace['sentences']:,.0f} sentences: "
            f"about {_seconds(scaled)} for {n:,}, at the load the machine had then.")


def make_report(run: Run, path: Path, mode: str, n: int, seed: int = 0) -> RunReport | None:
    """:func:`run_report` over the first ``n`` validation sentences, with a progress bar, kept by the
    server; None, with the error shown, if those sentences cannot be scored."""
    texts, labels = run.validation
    bar = st.progress(0.0, text="Starting…")
    timer = ReportTimer()

    def on_progress(p: Progress) -> None:
        bar.progress(p.done / p.total, text=timer.text(p))

    try:
        report = run_report(run.model, run.encoder, run.label_names, texts[:n], labels[:n], knock_out_mode=mode,
                            seed=seed, on_progress=on_progress)
    except InputError as err:
        st.error(f"The report cannot be made: {err}")
        return None
    finally:
        bar.empty()
    last_report_pace().update(sentences=float(n), seconds=timer.seconds())
    store, lock = _reports()
    with lock:
        store[(run_stamp(path), mode, n, seed)] = report
        while len(store) > REPORTS_KEPT:
            store.popitem(last=False)
    return report


def report_controls(run: Run) -> tuple[str, int, bool]:
    """The report's knock-out mode, how many validation sentences, and whether "Run the report" was clicked."""
    n_val = len(run.validation[0])
    if not 1 <= int(state.current("faith_report_n", n_val)) <= n_val:  # chosen for a run with more of them
        state.put("faith_report_n", n_val)
    left, right = st.columns(2, gap="large")
    n = left.number_input(f"Validation sentences (of {n_val:,})", 1, max(n_val, 1), **kept("faith_report_n", n_val),
                          help="Fewer sentences give a quicker, rougher report.")
    mode = right.radio("Knock-out", list(MODES), format_func=MODES.get, horizontal=True,
                       **kept("faith_report_mode", "zero", list(MODES)))
    clicked = st.button("Run the report", key="faith_report_run", type="primary")
    return mode, min(int(n), n_val), clicked


def report_views(report: RunReport, run: Run) -> None:
    """Per-head knock-out, the pruning curve, each method against random, agreement, Jain & Wallace's test."""
    names = map_words(run.model_config)
    st.markdown(f"**{report.n:,} sentences**" + (f" ({report.skipped} left out: no known word)" if report.skipped else "")
                + f" · accuracy with every head on: **{report.accuracy:.1%}** · loss {report.loss:.3f}")
    st.subheader("Each head switched off alone")
    st.caption("Accuracy over the sentences with that one head off (in brackets: the change). A head whose removal "
               "costs nothing is one the model does not need.")
    named = _report_naming(report, run.name)
    st.plotly_chart(figs.head_accuracy(report.head_accuracy, report.accuracy, names),
                    key="faith_report_heads", config=named("Accuracy with each head off", knock_out=True))
    st.dataframe(head_table(report, run.model_config))
    st.subheader("Pruning: heads off one after another, least needed first")
    st.plotly_chart(figs.pruning_curve(report.pruning_order, report.pruning_accuracy), key="faith_report_pruning",
                    config=named("Pruning heads", knock_out=True))
    st.subheader("Which explanation does the model depend on?")
    st.caption("Mean over the sentences. Compare each method with the random order: a method no better than random "
               "does not point at the words the prediction depends on.")
    st.plotly_chart(figs.faithfulness_bars(report.comprehensiveness, report.sufficiency, report.titles),
                    key="faith_report_bars", config=named("Comprehensiveness and sufficiency"))
    if report.shapley:
        st.caption(f"Shapley values: {report.shapley}.")
    st.dataframe(eraser_table(report.comprehensiveness, report.sufficiency, report.titles))
    st.subheader("Mean agreement between the methods")
    st.plotly_chart(figs.kendall_matrix(report.kendall, report.methods, report.titles), key="faith_report_kendall",
                    config=named("Mean agreement of the methods"))
    st.subheader("Jain & Wallace's test: shuffle the attention")
    tvd = np.asarray(report.permutation_tvd)
    st.caption("The last layer's attention weights (the pooling attention's, if the model has one) are shuffled over "
               "the words, and the output distribution compared with the original (per sentence: the median over 20 "
               "shuffles). Near 0: the prediction did not care where that attention looked."
               + (f" Median over the sentences: {np.median(tvd):.2g}; {np.mean(tvd < 0.01):.0%} move less than 0.01."
                  if tvd.size else ""))
    st.plotly_chart(figs.tvd_histogram(report.tvd_histogram["edges"], report.tvd_histogram["counts"]),
                    key="faith_report_tvd", config=named("Shuffled attention"))


def _report_naming(report: RunReport, model: str) -> Callable[..., dict]:
    """The plotly config (:func:`chart_downloads.config`) of a chart of the whole-run report, from what it shows: the
    run, how many sentences, and for a chart of knocked-out heads (``knock_out=True``) how they were knocked out."""

    def named(what: str, *, knock_out: bool = False) -> dict:
        how = f", {KNOCKED_OUT[report.knock_out_mode]}" if knock_out else ""
        return chart_downloads.config(what, model=model, detail=f"{report.n:,} sentences{how}")

    return named


def head_table(report: RunReport, cfg: ModelConfig) -> pd.DataFrame:
    """One row per head: accuracy and loss with it alone off, and its place in the pruning order."""
    place = {h: i + 1 for i, h in enumerate(report.pruning_order)}
    names = map_words(cfg)
    rows = [{"head": head_name(layer, h, cfg), "map": names[layer], "accuracy": acc,
             "accuracy change": acc - report.accuracy, "loss": report.head_loss[layer][h],
             "pruned": place[head_name(layer, h, cfg)]}
            for layer, row in enumerate(report.head_accuracy) for h, acc in enumerate(row)]
    return pd.DataFrame(rows).set_index("head").round(4)


def what_it_means() -> None:
    """The explanation for learners, citing the papers."""
    st.subheader("What agreement and disagreement mean")
    st.markdown(WHAT_IT_MEANS.replace("\n", " "))
    st.caption("Jain & Wallace (2019), *Attention is not Explanation*, NAACL · Wiegreffe & Pinter (2019), *Attention is "
               "not not Explanation*, EMNLP · Abnar & Zuidema (2020), *Quantifying Attention Flow in Transformers*, ACL · "
               "Sundararajan et al. (2017), *Axiomatic Attribution for Deep Networks* (integrated gradients) · "
               "DeYoung et al. (2020), *ERASER*, ACL.")
