#!/usr/bin/env bash
# Re-create the bundled model the app opens with (data/default_run): the `default` preset
# on the 3,000 UCI sentences, seed 0. Deterministic for a given torch build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m attention_core train data/uci_sentiment_sentences.csv --preset default --seed 0 \
  --out data/default_run --overwrite --name "default model on UCI sentences" "$@"
# The home page's first picture before torch is loaded (ui/preview.py): this model's answer to its first example.
python -m ui.preview
