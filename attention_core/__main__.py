"""``python -m attention_core …``: see :mod:`attention_core.cli`."""

import sys

from attention_core.cli import main

sys.exit(main())
