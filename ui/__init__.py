"""The Streamlit app's helpers: figures (plotly only), training jobs (threads), page helpers."""
