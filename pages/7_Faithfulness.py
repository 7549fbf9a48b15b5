"""Faithfulness: is attention an explanation? Every method's word importance tested by erasing words,
head knock-out, and the same over the run's validation set."""

from __future__ import annotations

import streamlit as st

from ui import faithfulness_views as views
from ui import model_notes, view_link
from ui.common import EXAMPLES, page_setup, sidebar_run
from ui.markup import escaped
from ui.sentence_box import sentence_box

page_setup("Faithfulness", "⚖️")
st.title("Is attention an explanation?")
intro = st.empty()  # says how many methods the model picked below has

link = view_link.ViewLink("Faithfulness")  # ?run=…&sentence=…&tab=…&off=1.2,pooling.1&mode=…
link.add(view_link.run())
path, run = sidebar_run("faith_run")
intro.caption(
    "Attention shows where the model looked. Here you test whether that is why it decided: score every word with "
    f"{views.method_count(run)} methods, erase the words each one ranks highest, switch heads off, and do the same "
    "over a whole run."
)
link.add(*views.view_params(run, EXAMPLES[0]))
link.write()
model_notes.untrained_notice(run)

tab_sentence, tab_heads, tab_run = view_link.tabs("faith_tab", list(views.TABS.values()))

with tab_run:  # first: a sentence the model cannot read stops the page below, not this report
    if not run.validation[0] and model_notes.head_untrained(run):
        st.info("The pretrained encoder was never trained here, so it has no labelled validation sentences to report "
                "on. Fine-tune it on the Train page, on a labelled CSV of yours or the bundled UCI sentences, and pick "
                "that run: the report scores its validation sentences.")
    elif not run.validation[0]:
        st.info("This run kept no validation sentences to report on: pick a run trained in this app.")
    else:
        mode, n, clicked = views.report_controls(run)
        report = views.cached_report(path, mode, n)
        if report is None and clicked:
            report = views.make_report(run, path, mode, n)
        if report is None:
            st.caption("Switches every head off in turn, then scores every method on each sentence. "
                       f"{views.report_estimate(n, views.last_report_pace())} The server keeps the result, so a second "
                       "look is instant.")
        else:
            views.report_views(report, run)
    st.divider()
    views.what_it_means()

with tab_sentence:
    text = sentence_box("Your sentence", "faith_text", EXAMPLES[0])
    lab = views.lab(run, path, text)
    views.prediction_line(lab)
    views.token_importance(lab, model=run.name)
    views.agreement(lab, model=run.name)
    views.curves_and_eraser(lab, model=run.name)

with tab_heads:
    st.caption(f"The sentence of the first tab: *{escaped(text)}*")
    views.knock_out_lab(run, text)
