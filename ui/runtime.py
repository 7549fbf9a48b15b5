"""Process settings for the app that must be in place before torch is imported.

``OMP_WAIT_POLICY=PASSIVE``: OpenMP worker threads sleep instead of spinning between
parallel regions. In a server where training threads, script runs and several sessions
share two cores, spinning threads starved each other: a 2-thread training run fell from
~5,000 to ~600 examples/s as soon as anything else ran; with PASSIVE it kept ~3,300.
Imported first by ``app.py`` and every page (``# isort: off`` keeps it first).
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
