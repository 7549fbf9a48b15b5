"""The home page's first picture before torch is loaded: the bundled model's answer to the first example.

On a cold start the server must import torch (most of the time before a newcomer sees anything;
benchmarks/README.md) before it can run a model. The bundled model's prediction for the home
page's first example sentence is saved next to it (``data/default_run/preview.json``, written by
``python -m ui.preview`` from the model itself; a test checks it against the model), so the home
page shows it at once while torch loads in the background. Anything else (another sentence,
another model) is computed live, as soon as torch is there. Light: json, threading, no torch.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from attention_core import map_names as naming
from attention_core.run_folders import BUNDLED_CHECKPOINT, BUNDLED_RUN, bundled_checkpoint_folder, list_runs
from attention_core.workspaces import runs_root

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RUN = BUNDLED_RUN
PREVIEW = DEFAULT_RUN / "preview.json"
BUNDLED_NAME = "Bundled: default model on UCI sentences"
PRETRAINED_NAME = "Pretrained: all-MiniLM-L6-v2 (head untrained)"  # the bundled pretrained encoder, when installed
PRETRAINED_RUN = Path(BUNDLED_CHECKPOINT)  # its "folder" in the model picker: load_run reads the name "minilm"
PICKER_HELP = "The bundled model, the pretrained all-MiniLM-L6-v2 (its classifier head untrained), or any run you trained."
EXAMPLES = [
    "the food was not good at all",
    "i love this fantastic product",
    "the battery died after a week, what a waste of money",
    "the acting was brilliant and the story moving",
    "very sad as they both fail",
]
MODEL_CODE = "ui.common"  # importing it imports torch and the model code
_warm_lock = threading.Lock()
_warming: threading.Thread | None = None


@dataclass(frozen=True)
class Preview:
    """A saved prediction of ``text`` and the facts about its run that the home page shows.

    ``prediction`` is ``attention_core.runs.Prediction.to_dict()`` as it was saved; its fields read
    as attributes too (``preview.label``, ``preview.attention``…), as on a ``Prediction``, so the
    home page draws either. On disk it is one flat JSON object: ``text``, the prediction's fields,
    then the run's facts.
    """

    text: str
    prediction: dict[str, Any]  # label, probabilities, tokens, unknown_tokens, attention [layer][head][query][key], notes
    run_name: str
    n_layers: int
    n_heads: int
    label_names: list[str]
    embeddings: str  # the embedding source, described
    # ModelConfig.map_names(): the Layer radio's choices, "Pooling" last for a model that pools by attention.
    # A file written before they were saved has none: its model pooled by the mean, a map per layer.
    map_names: list[str] | None = None

    def __getattr__(self, name: str) -> Any:  # only for names that are not fields: the prediction's
        try:
            return self.__dict__["prediction"][name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def __post_init__(self) -> None:
        if self.map_names is None:
            object.__setattr__(self, "map_names", naming.map_names(self.n_layers, pooling=False))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Preview:
        facts = {f.name for f in fields(cls)} - {"prediction"}
        missing = facts - set(data) - {"map_names"}
        if missing:
            raise TypeError(f"the preview has no {', '.join(sorted(missing))}")
        return cls(prediction={k: v for k, v in data.items() if k not in facts},
                   **{k: data[k] for k in facts if k in data})

    def to_json(self) -> dict[str, Any]:
        facts = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("text", "prediction")}
        return {"text": self.text, **self.prediction, **facts}


def model_code_loaded() -> bool:
    """Whether this server has imported the model code (torch) already."""
    return MODEL_CODE in sys.modules


def runs_saved() -> bool:
    """Whether the runs root (:func:`attention_core.workspaces.runs_root`, else ``./runs``) holds a
    saved run. It errs towards yes (a root that cannot be read): the quick path, which shows the
    bundled model alone, is then not taken, and the model picker lists the user's runs from the start."""
    try:
        return bool(list_runs(runs_root(ROOT / "runs")))
    except OSError:
        return True


def pretrained_installed() -> bool:
    """Whether the bundled pretrained encoder's package is installed (located, not imported: no torch)."""
    return bundled_checkpoint_folder() is not None


@lru_cache(maxsize=1)
def load(path: Path = PREVIEW) -> Preview | None:
    """The saved prediction, or None if there is none (the page then waits for torch, as before)."""
    try:
        return Preview.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def warm_up() -> None:
    """Load the model code (torch) and the bundled model in a background thread, once per server, and
    run it once: the learner's first sentence of their own then finds it ready (or waits only for
    the rest of it). Then the same for the pretrained encoder, when its package is installed (~1 s, 90 MB):
    picking it in a model picker then shows its maps at once."""
    global _warming
    with _warm_lock:
        if _warming is None and not model_code_loaded():
            sys.setswitchinterval(0.001)  # as ui.common sets it: the import hands the GIL to the server often
            # Not a daemon: a process that exits while this thread is inside torch's import or first pass can
            # abort (SIGABRT, seen in the test suite); the interpreter waits the few seconds it has left.
            _warming = threading.Thread(target=_load_the_model, name="load-the-model", daemon=False)
            _warming.start()


def _load_the_model() -> None:
    common = importlib.import_module(MODEL_CODE)
    common.default_run().predict(EXAMPLES[1])  # (its first forward pass sets up torch's kernels)
    if pretrained_installed():  # then the pretrained encoder (once per server): picking it finds it loaded
        common.pretrained_run().predict(EXAMPLES[1])


def write(run_dir: Path = DEFAULT_RUN, text: str = EXAMPLES[0], path: Path = PREVIEW) -> Preview:
    """Save ``run_dir``'s prediction for ``text`` (``bash scripts/make_default_run.sh`` calls this)."""
    from attention_core import load_run  # torch: only when writing

    run = load_run(run_dir)
    preview = Preview(text=text, prediction=run.predict(text).to_dict(), run_name=run.name,
                      n_layers=run.model_config.n_layers, n_heads=run.model_config.n_heads,
                      label_names=list(run.label_names), embeddings=run.encoder.embeddings.source.describe(),
                      map_names=run.model_config.map_names())
    path.write_text(json.dumps(preview.to_json()) + "\n", encoding="utf-8")
    return preview


if __name__ == "__main__":
    print(f"wrote {PREVIEW} for {write().text!r}")
