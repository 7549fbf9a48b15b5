"""Check yourself: questions on your own model and sentence, answered by the model, each with the view that shows why."""

from __future__ import annotations

import streamlit as st

from attention_core.errors import InputError
from ui import model_notes, view_link
from ui import quiz_views as views
from ui.common import EXAMPLES, page_setup, sidebar_run
from ui.sentence_box import sentence_box

page_setup("Check yourself", "❓")
st.title("Check yourself")
st.caption(
    "Questions about the model you picked and your sentence. Answer, then see the model's own numbers and the view "
    "that shows why. Every answer is computed from the model now: train another run, and the answers change."
)

link = view_link.ViewLink("Check yourself")  # ?run=…&sentence=…
link.add(view_link.run())
path, run = sidebar_run("quiz_run")
link.add(view_link.text("sentence", "quiz_text", EXAMPLES[0]))
link.write()
if model_notes.head_untrained(run):
    st.info("This is the pretrained encoder before fine-tuning: its attention is real, but its classifier head is "
            "untrained, so its label means nothing yet. The questions here are about its attention only; fine-tune it "
            "on the Train page for questions about its predictions too.", icon=":material/info:")
text = sentence_box("Your sentence", "quiz_text", EXAMPLES[0])
if not text.strip():
    st.info("Type a sentence above to get questions about it.")
    st.stop()
try:
    offered = views.candidates(run, path, text)
except InputError as err:
    st.error(f"{err}")
    st.stop()

state = views.quiz()
views.score(state)
question = views.current(state, offered)
if question is None:
    st.success("You have answered every question on this sentence and model: type another sentence, or pick "
               "another model in the sidebar.")
    st.stop()
views.ask(state, question)
