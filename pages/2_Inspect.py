"""Inspect (placeholder while it is being written)."""

import streamlit as st

st.set_page_config(page_title="Inspect · Attention Playground", layout="wide")
st.title("🔬 Inspect")
