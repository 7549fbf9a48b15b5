"""runner: trainings in processes of their own, for the app server (no Streamlit here).

The third floor of the house: pages → ui (Streamlit helpers and figures) → runner → attention_core.

* :mod:`~runner.protocol` — the typed messages between the server and a training process
* :mod:`~runner.queue` — the server's training queue (N at once, first in first out, per-owner limits, caps)
* :mod:`~runner.jobs` — ``TrainingJob`` and ``JobSequence`` in the server; ``JobHost`` starts the worker
* :mod:`~runner.registry` — the server's jobs by workspace, the one place a page's job is kept (a reload finds it)
* :mod:`~runner.worker` — ``python -m runner.worker``: forks one training process per job
"""
