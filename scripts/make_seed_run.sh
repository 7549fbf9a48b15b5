#!/usr/bin/env bash
# Re-create the bundled models of the Backpropagation page (data/seed_run): the `seed` preset (the
# Julia post's model) on the post's small.csv, seed 0, after 100 and after 1000 epochs (the post's).
# One thread, as the app's server trains: deterministic for a given torch build.
set -euo pipefail
cd "$(dirname "$0")/.."
for epochs in 100 1000; do
  python -m attention_core train data/small.csv --preset seed --seed 0 --epochs "$epochs" --threads 1 \
    --out "data/seed_run/${epochs}_epochs" --overwrite --name "seed model, ${epochs} epochs on small.csv" --quiet "$@"
done
