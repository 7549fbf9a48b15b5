"""Is attention an explanation? Token importance from several methods, tested by erasing tokens.

For one sentence (:func:`sentence_lab`) every method in :data:`METHODS` scores each token;
deletion and insertion curves then show how the predicted class's probability moves when the
top-k tokens of each method's order (or of a random order) are removed or kept alone, and
ERASER's comprehensiveness and sufficiency (DeYoung et al., 2020, "ERASER: A Benchmark to
Evaluate Rationalized NLP Models", ACL, arXiv:1911.03429) sum the curves up. For a whole run
(:func:`run_report`) the same numbers are averaged over its validation sentences, next to each
head's knock-out accuracy and Jain & Wallace's permutation test (2019, "Attention is not
Explanation", NAACL, arXiv:1902.10186; see also Wiegreffe & Pinter, 2019, "Attention is not
not Explanation", EMNLP, arXiv:1908.04626).

Removing a token means masking it: no query attends to it and mean or max pooling leaves it
out, while the other tokens keep their positions. Leave-one-out, Shapley values and the curves all remove
tokens this way, so they measure the same model on the same inputs.

Interventions on the attention go through ``model.forward_features(…, edit_attention=…)``
(:data:`attention_core.model.AttentionEdit`): :func:`knock_out` switches heads off, and the
permutation test shuffles the last layer's weights.

Integrated gradients, leave-one-out and Shapley values (exact or sampled) are written here, batched, rather than
taken from Captum (why: README, "Dependencies and why"). A method that needs forward passes asks for
them (it yields a :class:`Keep`, :class:`Shuffle` or :class:`Gradients` request and is sent the answer),
so the whole-run report answers many sentences' requests in one padded batch
(:func:`run_side_by_side`) where a lone sentence would run dozens of small ones.

Legend: N rows of a batch, T tokens, L layers, H heads, C classes, F input features.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attention_core.encoding import Batch, Encoded, TextEncoder
from attention_core.errors import ConfigError, DataError, EmbeddingError
from attention_core.explain import attention_rollout, log_prob_gradients, saliency_alphas, saliency_from_gradients
from attention_core.map_names import head_name, heads_hint
from attention_core.metrics import kendall_matrix
from attention_core.model import AttentionClassifier, AttentionEdit, Hidden, ModelConfig
from attention_core.sentence import evaluating

WHAT_IT_MEANS = """\
Attention weights say where the model looked, not why it decided. Jain & Wallace (2019) found
that attention often disagrees with gradient and erasure importance, and that shuffling or
replacing it can leave the prediction unchanged; Wiegreffe & Pinter (2019) answered that
attention can still be a plausible explanation, to be tested rather than assumed. The test here
is erasure (DeYoung et al., 2020): remove the words a method ranks highest. If the probability
falls far (high comprehensiveness) and the top words alone keep it (low sufficiency), the model
depends on those words. Methods that agree (Kendall's tau near 1) tell one story; where attention
disagrees with leave-one-out or Shapley, trust the ones whose erasure moves the prediction.
Rollout and flow (Abnar & Zuidema, 2020) follow attention through every layer and usually agree
with erasure better than one layer's raw weights."""

KNOCK_OUT_MODES = ("zero", "uniform")
ERASER_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)  # ERASER's AOPC bins: top 1 %, 5 %, … of the tokens
SHAPLEY_EXACT_TOKENS = 12  # the lab's Shapley values are exact (2^T masked rows) up to this many tokens
REPORT_SHAPLEY_EXACT_TOKENS = 8  # the report's: up to 12 made it 1.6× slower, 10 ~1–2 s (benchmarks/README.md)
_FLOW_SCALE = 2**20  # scipy's max-flow wants integer capacities: weights in units of 2⁻²⁰


# --- head knock-out ---------------------------------------------------------------------------


def knock_out(heads: Iterable[tuple[int, int]], cfg: ModelConfig, mode: str = "zero") -> AttentionEdit | None:
    """An attention edit that switches ``heads`` (0-based (layer, head)) off; None when there are none.

    Layer ``cfg.n_layers`` (0-based), after the attention layers, is a pooling attention's query.

    * ``"zero"``: the head's attention weights become 0, so its output is removed before the
      output projection: the layer goes on with the other heads alone.
    * ``"uniform"``: the head attends equally to every real (non-padding) token: it still passes
      on an average of the sentence, but no longer chooses where to look.

    None for no heads means the model runs exactly as without an edit (same numbers, bit for bit).

    Example:
        >>> logits, attn = model(ids, edit_attention=knock_out([(1, 3)], model.cfg))
    """
    if mode not in KNOCK_OUT_MODES:
        raise ConfigError(f"knock-out mode {mode!r} is not known", f"choose one of {', '.join(KNOCK_OUT_MODES)}")
    off = torch.zeros(cfg.n_attention_maps, cfg.n_heads, dtype=torch.bool)  # (L or L + 1, H)
    for layer, head in heads:
        if not (0 <= layer < cfg.n_attention_maps and 0 <= head < cfg.n_heads):
            raise ConfigError(f"head {head_name(layer, head)} does not exist", heads_hint(cfg))
        off[layer, head] = True
    if not off.any():
        return None

    def edit(layer: int, weights: Tensor, key_mask: Tensor) -> Tensor:
        here = off[layer].to(weights.device)[None, :, None, None]  # (1, H, 1, 1)
        if not here.any():
            return weights
        if mode == "zero":
            return weights.masked_fill(here, 0.0)
        uniform = key_mask.expand_as(weights).to(weights.dtype)  # (B, H, T, T)
        uniform = uniform / uniform.sum(-1, keepdim=True).clamp(min=1.0)
        return torch.where(here, uniform, weights)

    return edit


def _permute_last_layer(order: Tensor, last: int) -> AttentionEdit:
    """Edit: the weights of map ``last`` (the last layer, or the pooling attention) with their keys
    shuffled, row b by ``order[b]`` (N, T)."""

    def edit(layer: int, weights: Tensor, key_mask: Tensor) -> Tensor:
        if layer != last:
            return weights
        index = order[:, None, None, :].expand_as(weights)  # (N, H, T or 1, T)
        return weights.gather(-1, index)

    return edit


# --- one sentence: the shared context ------------------------------------------------------------


@dataclass
class SentenceContext:
    """One sentence, as every method sees it (tensors on the model's device, batch of one)."""

    model: AttentionClassifier
    encoded: Encoded
    features: Tensor  # (1, T, F) model.embed of the sentence
    attention: Tensor  # (L, H, T, T), or (L + 1, H, T, T) with a pooling attention's map last
    probabilities: Tensor  # (C,)
    target: int  # the class explained: the predicted one
    rng: np.random.Generator
    ig_steps: int = 64
    shapley_permutations: int = 16
    shapley_exact_tokens: int = SHAPLEY_EXACT_TOKENS  # up to this many tokens Shapley values are exact, above sampled
    erased: dict[bytes, float] = field(default_factory=dict, repr=False)  # p(target) of each keep mask answered

    @property
    def n_tokens(self) -> int:
        return self.features.shape[1]

    def target_probability(self, keep: Tensor) -> np.ndarray:
        """p(target) with only the tokens where ``keep`` (N, T) is True, the rest masked. → (N,)."""
        return run_side_by_side([self], [_ask(Keep(keep))])[0]

    @property
    def layers(self) -> Tensor:
        """The attention layers' maps (L, H, T, T), without a pooling attention's."""
        return self.attention[: self.model.cfg.n_layers].cpu()

    @property
    def pooling_attention(self) -> Tensor | None:
        """The pooling query's weights over the tokens, head average (T,), for a model that pools by attention."""
        if self.attention.shape[0] <= self.model.cfg.n_layers:
            return None
        return self.attention[self.model.cfg.n_layers].double().mean(dim=0)[0].cpu()  # every row the same

    def readout(self) -> Tensor:
        """How the pooled vector reads the output tokens: one weight per token (T,), summing to 1.

        Mean (and, as an approximation, max) pooling reads every token equally; ``first`` reads
        token 0; attention pooling reads them by its weights.
        """
        t = self.n_tokens
        pooling = self.pooling_attention
        if pooling is not None:
            return pooling
        if self.model.cfg.pooling == "first":
            return torch.nn.functional.one_hot(torch.tensor(0), t).double()
        return torch.full((t,), 1.0 / t, dtype=torch.float64)


# --- forward passes, many sentences side by side ----------------------------------------------------


@dataclass(frozen=True)
class Keep:
    """A request: p(target) with only the tokens where ``rows`` (N, T) is True, the rest masked. Answer (N,)."""

    rows: Tensor


@dataclass(frozen=True)
class Shuffle:
    """A request: the class probabilities (N, C) of the whole sentence with the last map's (the last layer's,
    or the pooling attention's) weights shuffled over the keys, row n by ``orders[n]`` (N, T)."""

    orders: Tensor


@dataclass(frozen=True)
class Gradients:
    """A request: the gradients of log p(target) with respect to the word vectors scaled by each of ``alphas``
    (N,). Answer (N, T, E)."""

    alphas: Tensor


Request = Keep | Shuffle | Gradients
ROWS_PER_PASS = 128  # rows of one forward pass: larger batches ran no faster per row (benchmarks/README.md)
KEEP_TOKENS_PER_PASS = 2048  # kept tokens of a pass of masked rows: 4096 ran 1.4× slower, 8192 2.8× (benchmarks/README.md)
KEEP_ROWS_PER_PASS = 256  # and at least this many rows
KNOCK_OUT_BATCH = 64  # sentences of a knock-out pass: 256 ran 25 % slower, padded further (benchmarks/README.md)


def _ask(request: Request) -> Generator[Request, Any, Any]:
    """A generator that makes one request and returns its answer."""
    return (yield request)


def run_side_by_side(contexts: Sequence[SentenceContext], steps: Sequence[Generator[Request, Any, Any]]) -> list:
    """Run each sentence's generator of requests to its end, answering the requests of every sentence of a
    round together (padded batches of :data:`ROWS_PER_PASS` rows), and give back what each returned.

    The rows of a batch do not interact (the model in eval mode; padding masked), so each sentence gets
    the numbers it would get alone, to float rounding (``tests/core/test_faithfulness.py``).
    """
    results: list = [None] * len(steps)
    pending: dict[int, Request] = {}

    def advance(i: int, answer: Any) -> None:
        try:
            pending[i] = steps[i].send(answer)
        except StopIteration as done:
            results[i] = done.value

    for i in range(len(steps)):
        advance(i, None)
    while pending:
        asked, pending = pending, {}
        answers: dict[int, Any] = {}
        for kind, answer in ((Keep, _keep_passes), (Shuffle, _shuffle_passes), (Gradients, _gradient_passes)):
            mine = {i: r for i, r in asked.items() if isinstance(r, kind)}
            if mine:
                answers.update(answer([contexts[i] for i in mine], list(mine.values()), list(mine)))
        for i in asked:
            advance(i, answers[i])
    return results


def _padded(contexts: Sequence[SentenceContext], t: int) -> tuple[Tensor, Tensor]:
    """The sentences' features padded to ``t`` tokens (S, t, F), and which tokens are real (S, t)."""
    first = contexts[0].features
    features = first.new_zeros(len(contexts), t, first.shape[-1])
    real = torch.zeros(len(contexts), t, dtype=torch.bool, device=first.device)
    for s, ctx in enumerate(contexts):
        features[s, : ctx.n_tokens] = ctx.features[0]
        real[s, : ctx.n_tokens] = True
    return features, real


def _pad_to(rows: Tensor, t: int, value: int | bool) -> Tensor:
    """Rows (N, T) padded on the right with ``value`` to (N, t)."""
    return torch.cat([rows, rows.new_full((rows.shape[0], t - rows.shape[1]), value)], dim=1)


def _rows_of(counts: Sequence[int]) -> Tensor:
    """Which sentence each row belongs to, for ``counts[s]`` rows of sentence s. → (sum of counts,)."""
    return torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))


def _passes(contexts: Sequence[SentenceContext], sentence: Tensor) -> Iterator[tuple[slice, int]]:
    """The rows (of sentences ``sentence``, (N,)) in passes of :data:`ROWS_PER_PASS`, each with the length of its
    longest sentence: a pass is padded no further (the sentences come sorted by length, so little)."""
    lengths = torch.tensor([ctx.n_tokens for ctx in contexts])[sentence.cpu()]
    for start in range(0, len(sentence), ROWS_PER_PASS):
        part = slice(start, start + ROWS_PER_PASS)
        yield part, int(lengths[part].max())


def _split(values: Tensor, counts: Sequence[int], keys: Sequence[int]) -> dict[int, Tensor]:
    return dict(zip(keys, torch.split(values, list(counts)), strict=True))


def _keep_passes(contexts: Sequence[SentenceContext], requests: Sequence[Keep], keys: Sequence[int]) -> dict[int, np.ndarray]:
    """Answer :class:`Keep` requests. Each distinct row of a sentence runs once, in the whole evaluation
    (``SentenceContext.erased``): the curves of different orders share many (the full and the empty sentence,
    the first tokens where methods agree), removing a method's top token is a row of leave-one-out, and exact
    Shapley values ask for every row there is. The layers run on the kept tokens alone (``model.enter_rows``),
    rows that keep as many tokens side by side (then by length)."""
    model = contexts[0].model
    asked = [_row_codes(r.rows) for r in requests]
    new: list[dict[bytes, int]] = []  # per sentence: the rows not answered before, each with where it was asked
    for ctx, codes in zip(contexts, asked, strict=True):
        new.append({})
        for j, code in enumerate(codes):
            if code not in ctx.erased and code not in new[-1]:
                new[-1][code] = j
    if any(new):
        t = max(ctx.n_tokens for ctx in contexts)
        features, _ = _padded(contexts, t)
        device = features.device
        masks = torch.cat([_pad_to(r.rows[list(rows.values())].cpu(), t, False) for r, rows in zip(requests, new, strict=True)])
        masks = masks.to(device)  # (ΣU, t)
        sentence = _rows_of([len(rows) for rows in new]).to(device)  # (ΣU,)
        targets = torch.tensor([ctx.target for ctx in contexts], device=device)[sentence]
        lengths = torch.tensor([ctx.n_tokens for ctx in contexts], device=device)[sentence]
        by_kept = torch.argsort(masks.sum(1) * (t + 1) + lengths, stable=True)  # by tokens kept, then by length
        p = torch.empty(len(masks), dtype=torch.float64, device=device)
        kept = masks.sum(1)[by_kept].cpu()
        with evaluating(model):
            for part, tokens in _keep_passes_of(contexts, sentence[by_kept], kept):
                rows = by_kept[part]
                hidden = model.enter_rows(features[:, :tokens], sentence[rows], masks[rows, :tokens])
                logits, _ = model.forward_from(hidden, need_weights=False)
                p[rows] = torch.softmax(logits.double(), -1).gather(1, targets[rows, None])[:, 0]
        values, start = p.cpu().tolist(), 0
        for ctx, rows in zip(contexts, new, strict=True):
            ctx.erased.update(zip(rows, values[start : start + len(rows)], strict=True))
            start += len(rows)
    return {k: np.array([ctx.erased[code] for code in codes]) for k, ctx, codes in zip(keys, contexts, asked, strict=True)}


def _keep_passes_of(contexts: Sequence[SentenceContext], sentence: Tensor, kept: Tensor) -> Iterator[tuple[slice, int]]:
    """Rows sorted by how many tokens they keep (``kept``, (N,)), in passes of about :data:`KEEP_TOKENS_PER_PASS`
    kept tokens (at least :data:`KEEP_ROWS_PER_PASS` rows), each with the length of its longest sentence."""
    lengths = torch.tensor([ctx.n_tokens for ctx in contexts])[sentence.cpu()]
    start = 0
    while start < len(sentence):
        fits = torch.arange(1, len(kept) - start + 1) * kept[start:].clamp(min=1) <= KEEP_TOKENS_PER_PASS  # r rows fit?
        rows = max(KEEP_ROWS_PER_PASS, int(fits.sum()))  # kept ascending: the first r rows fit, then none
        part = slice(start, start + rows)
        yield part, int(lengths[part].max())
        start += rows


def _row_codes(rows: Tensor) -> list[bytes]:
    """A key per keep mask (N, T): the row's bits, packed."""
    return [row.tobytes() for row in np.packbits(rows.cpu().numpy(), axis=1)]


def _shuffle_passes(contexts: Sequence[SentenceContext], requests: Sequence[Shuffle], keys: Sequence[int]) -> dict[int, Tensor]:
    """Answer :class:`Shuffle` requests; a padded position stays where it is (its weight is 0). The shuffle edits
    the last map alone, so the maps below it run once per sentence, not once per shuffle."""
    model = contexts[0].model
    t = max(ctx.n_tokens for ctx in contexts)
    features, real = _padded(contexts, t)
    device = features.device
    orders = torch.cat([torch.cat([r.orders, torch.arange(r.orders.shape[1], t).expand(len(r.orders), -1)], dim=1)
                        for r in requests]).to(device)  # (ΣN, t)
    sentence = _rows_of([len(r.orders) for r in requests]).to(device)
    last = model.cfg.n_attention_maps - 1
    probabilities = []
    with evaluating(model):
        below = model.advance(model.enter(features, real), last)  # the maps below the shuffled one: once a sentence
        for part, tokens in _passes(contexts, sentence):
            logits, _ = model.forward_from(below.rows(sentence[part], tokens), need_weights=False,
                                           edit_attention=_permute_last_layer(orders[part, :tokens], last))
            probabilities.append(torch.softmax(logits.double(), -1))
    return _split(torch.cat(probabilities), [len(r.orders) for r in requests], keys)


def _gradient_passes(contexts: Sequence[SentenceContext], requests: Sequence[Gradients],
                     keys: Sequence[int]) -> dict[int, Tensor]:
    """Answer :class:`Gradients` requests (:func:`~attention_core.explain.log_prob_gradients`)."""
    model = contexts[0].model
    e = model.cfg.embedding_dim
    t = max(ctx.n_tokens for ctx in contexts)
    features, real = _padded(contexts, t)
    sentence = _rows_of([len(r.alphas) for r in requests]).to(features.device)
    alphas = torch.cat([r.alphas for r in requests]).to(features)  # (ΣN,)
    targets = torch.tensor([ctx.target for ctx in contexts], device=features.device)[sentence]
    grads = []
    with evaluating(model):
        for part, tokens in _passes(contexts, sentence):
            x = features[sentence[part], :tokens]
            grad = log_prob_gradients(model, alphas[part, None, None] * x[..., :e], x[..., e:],
                                      real[sentence[part], :tokens], targets[part])
            grads.append(torch.nn.functional.pad(grad, (0, 0, 0, t - tokens)))  # (rows, t, E)
    per_sentence = _split(torch.cat(grads), [len(r.alphas) for r in requests], keys)
    return {k: per_sentence[k][:, : ctx.n_tokens] for k, ctx in zip(keys, contexts, strict=True)}


# --- the methods ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """A way to score each token's importance for the prediction.

    ``scorer(ctx)`` returns the scores (T,), larger = more important for the target class; one that needs
    forward passes is a generator: it yields its requests (:data:`Request`), is sent each answer and
    returns the scores."""

    name: str
    title: str
    measures: str  # one line for learners: what this number is
    scorer: Callable[[SentenceContext], np.ndarray | Generator[Request, Any, np.ndarray]]
    available: Callable[[AttentionClassifier], bool] = field(default=lambda model: True)

    def steps(self, ctx: SentenceContext) -> Generator[Request, Any, np.ndarray]:
        """The scores as a generator of requests, whether the scorer is one or not."""
        result = self.scorer(ctx)
        if isinstance(result, Generator):
            result = yield from result
        return np.asarray(result, dtype=float)

    def score(self, ctx: SentenceContext) -> np.ndarray:
        """The scores of this one sentence, its requests answered alone. → (T,)."""
        return run_side_by_side([ctx], [self.steps(ctx)])[0]


def _last_layer_attention(ctx: SentenceContext) -> np.ndarray:
    mean = ctx.layers[-1].double().mean(dim=0)  # (T, T) head average
    return (ctx.readout() @ mean).numpy()


def _pooling_attention(ctx: SentenceContext) -> np.ndarray:
    pooling = ctx.pooling_attention
    assert pooling is not None  # offered only for models that pool by attention
    return pooling.numpy()


def _rollout(ctx: SentenceContext) -> np.ndarray:
    rollout = attention_rollout(ctx.layers, residual=ctx.model.cfg.residual).double()  # (T, T)
    return (ctx.readout() @ rollout).numpy()


def _flow(ctx: SentenceContext) -> np.ndarray:
    return attention_flow(ctx.layers, ctx.readout(), residual=ctx.model.cfg.residual)


def _gradient(method: str) -> Callable[[SentenceContext], Generator[Request, Any, np.ndarray]]:
    def score(ctx: SentenceContext) -> Generator[Request, Any, np.ndarray]:
        steps = ctx.ig_steps if method == "integrated_gradients" else 1
        grads = yield Gradients(saliency_alphas(method, steps))  # (N, T, E)
        words = ctx.features[0, :, : ctx.model.cfg.embedding_dim]  # (T, E)
        return saliency_from_gradients(words, grads, method).double().cpu().numpy()

    return score


def _leave_one_out(ctx: SentenceContext) -> Generator[Request, Any, np.ndarray]:
    t = ctx.n_tokens
    keep = ~torch.eye(t, dtype=torch.bool)  # row i: every token but i
    full = float(ctx.probabilities[ctx.target])
    return full - (yield Keep(keep))


def _shapley(ctx: SentenceContext) -> Generator[Request, Any, np.ndarray]:
    """Exact where the sentence has at most ``ctx.shapley_exact_tokens`` tokens (:func:`_exact_shapley`), else
    permutation sampling (Castro et al., 2009): each token's mean marginal gain over random orders."""
    t, n = ctx.n_tokens, ctx.shapley_permutations
    orders = np.stack([ctx.rng.permutation(t) for _ in range(n)])  # (n, T)
    # drawn either way: the random orders drawn after them (curves, permutation test) do not depend on which it is
    if t <= ctx.shapley_exact_tokens:
        return (yield from _exact_shapley(t))
    rank = np.argsort(orders, axis=1)  # rank[p, i]: where token i comes in order p
    keep = torch.from_numpy(rank[:, None, :] < np.arange(t + 1)[None, :, None])  # (n, T+1, T): first k kept
    values = (yield Keep(keep.reshape(-1, t))).reshape(n, t + 1)
    gains = np.diff(values, axis=1)  # (n, T): gain of the k-th token of each order
    out = np.zeros(t)
    np.add.at(out, orders.ravel(), gains.ravel())
    return out / n


def _exact_shapley(t: int) -> Generator[Request, Any, np.ndarray]:
    """Shapley values by their definition: φ_i = Σ over the subsets S of the other tokens of
    |S|! (T − |S| − 1)! / T! · (v(S ∪ {i}) − v(S)), v = p(target) with only S kept: 2^T masked rows."""
    subsets = np.arange(2**t)  # subset s keeps token i where bit i of s is set
    keep = (subsets[:, None] >> np.arange(t)[None, :]) & 1 == 1  # (2^T, T)
    values = yield Keep(torch.from_numpy(keep))  # (2^T,)
    size = keep.sum(1)
    weight = np.array([math.factorial(k) * math.factorial(t - k - 1) / math.factorial(t) for k in range(t)])
    out = np.empty(t)
    for i in range(t):
        without = subsets[~keep[:, i]]  # (2^(T−1),) the subsets that leave token i out
        out[i] = np.sum(weight[size[without]] * (values[without | (1 << i)] - values[without]))
    return out


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method to :data:`METHODS` (e.g. a pooling attention for models that have one)."""
    METHODS[method.name] = method
    return method


for _method in (
    Method("attention", "Attention (last layer)",
           "how much the last layer's heads, averaged, look at each word as the sentence is pooled",
           _last_layer_attention),
    Method("pooling_attention", "Pooling attention",
           "the weight the pooling query gives each word when it sums the sentence up (models that pool by attention)",
           _pooling_attention, available=lambda model: model.cfg.pooling == "attention"),
    Method("rollout", "Attention rollout",
           "attention multiplied through the layers, with the residual path: how much of each word reaches the output",
           _rollout),
    Method("flow", "Attention flow",
           "the most attention that can stream from each word to the output through the layers (a max-flow)",
           _flow),
    Method("grad_x_input", "Gradient × input",
           "how fast the predicted class's log-probability changes with each word's vector, times that vector",
           _gradient("grad_x_input")),
    Method("integrated_gradients", "Integrated gradients",
           "each word's share of the change in log-probability from an all-zero input to this sentence",
           _gradient("integrated_gradients")),
    Method("leave_one_out", "Leave-one-out erasure",
           "how much the predicted class's probability drops when this one word is removed",
           _leave_one_out),
    Method("shapley", "Shapley value",
           "each word's average gain in probability when added to subsets of the other words: every subset (exact) "
           "in short sentences, random orders (sampled) in longer ones",
           _shapley),
):
    register(_method)


def attention_flow(attention: Tensor, readout: Tensor, *, residual: bool = True) -> np.ndarray:
    """Attention flow (Abnar & Zuidema, 2020): per input token, the max flow to the pooled output.

    The layer graph has a node per token and layer (inputs at layer 0); an edge from token j at
    layer l−1 to token i at layer l carries at most Â_l[i, j], the head-averaged weights with the
    residual as in :func:`~attention_core.explain.attention_rollout` (0.5·A + 0.5·I, rows
    renormalised). Output token i feeds a sink with capacity ``readout[i]`` (mean pooling: 1/T
    each; ``first``: token 0 alone, the paper's flow to [CLS]). Unlike rollout, which sums every
    path's product, flow is limited by each path's narrowest edge.

    Shape:
        attention (L, H, T, T), readout (T,) → (T,).
    """
    n_layers, t = attention.shape[0], attention.shape[-1]
    layers = [attention_rollout(attention[i : i + 1], residual=residual).double() for i in range(n_layers)]  # Â_l (T, T)
    token = np.arange(t)
    tails = [np.repeat(i * t + token, t) for i in range(n_layers)] + [n_layers * t + token]  # edge j → i: Â[i, j]
    heads = [np.tile((i + 1) * t + token, t) for i in range(n_layers)] + [np.full(t, (n_layers + 1) * t)]
    capacities = [a.numpy().T.ravel() for a in layers] + [readout.numpy()]
    graph = _FlowGraph((n_layers + 1) * t + 1, np.concatenate(tails), np.concatenate(heads),
                       np.rint(np.concatenate(capacities) * _FLOW_SCALE).astype(np.int64))
    return graph.max_flows(token) / _FLOW_SCALE


_FLOW_NODES_PER_CALL = 8192  # nodes of one scipy call (copies of a graph): a 64-token sentence's 2-layer graph takes 2 calls


@dataclass(frozen=True)
class _FlowGraph:
    """A graph of ``n`` nodes, the last the sink, with integer capacities on edges ``tails[e]`` → ``heads[e]``."""

    n: int
    tails: np.ndarray  # (E,)
    heads: np.ndarray  # (E,)
    capacities: np.ndarray  # (E,) int64

    def max_flows(self, sources: np.ndarray) -> np.ndarray:
        """The max flow from each of ``sources`` (nodes no edge enters) to the sink, in the capacities' units.
        → (S,) float.

        scipy's ``maximum_flow`` converts its graph on every call (~1 ms, more than the flow itself on
        these graphs), so one call solves several: a copy of the graph per source, every copy fed by one
        common source and draining into one common sink. The copies share no node, so the common max flow
        is the sum of theirs and each copy carries its own max flow (the same integers as one call each,
        ``tests/core/test_faithfulness.py``). A copy leaves out the other sources' edges: nothing flows into
        a source, so no flow from its own source could use them.
        """
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import maximum_flow  # scipy comes with gensim

        real = self.capacities > 0
        tails, heads, capacities = self.tails[real], self.heads[real], self.capacities[real]
        if np.isin(heads, sources).any():
            raise ValueError("a source of max_flows has an edge into it")
        upper = np.flatnonzero(~np.isin(tails, sources))  # the edges every copy has
        own = [np.flatnonzero(tails == s) for s in sources]  # each source's edges
        out_of = np.bincount(tails, capacities, minlength=self.n).astype(np.int64)  # all a node can send
        into_sink = int(capacities[heads == self.n - 1].sum())  # all a copy can take in
        flows = np.empty(len(sources))
        per_call = max(1, _FLOW_NODES_PER_CALL // self.n)
        for start in range(0, len(sources), per_call):
            chosen = sources[start : start + per_call]
            m = len(chosen)
            offsets = np.arange(m) * self.n  # copy c's nodes: c·n …
            source, sink = m * self.n, m * self.n + 1
            edges = [np.concatenate([upper, own[start + c]]) for c in range(m)]
            rows = np.concatenate([tails[e] + o for e, o in zip(edges, offsets, strict=True)]
                                  + [np.full(m, source), offsets + self.n - 1])
            cols = np.concatenate([heads[e] + o for e, o in zip(edges, offsets, strict=True)]
                                  + [offsets + chosen, np.full(m, sink)])
            caps = np.concatenate([capacities[e] for e in edges] + [out_of[chosen], np.full(m, into_sink)])
            graph = csr_array((caps.astype(np.int32), (rows, cols)), shape=(sink + 1, sink + 1))
            flow = maximum_flow(graph, source, sink).flow  # (nodes, nodes); the common source's row: into each copy
            fed = dict(zip(flow.indices[flow.indptr[source] : flow.indptr[source + 1]].tolist(),
                           flow.data[flow.indptr[source] : flow.indptr[source + 1]].tolist(), strict=True))
            flows[start : start + m] = [fed.get(int(c), 0) for c in offsets + chosen]
        return flows


# --- curves and ERASER ------------------------------------------------------------------------------


def _order_masks(orders: np.ndarray, ks: np.ndarray) -> Tensor:
    """Keep masks for removing the first k tokens of each order, and for keeping only them, at each k of ``ks``.

    Shape:
        orders (O, T), ks (K,) → (O, 2, K, T): [:, 0] deletion, [:, 1] insertion.
    """
    rank = np.argsort(orders, axis=1)  # rank[o, i]: where token i comes in order o
    top_k = torch.from_numpy(rank[:, None, :] < ks[None, :, None])  # (O, K, T): the first k of each order
    return torch.stack([~top_k, top_k], dim=1)


def eraser_ks(t: int) -> list[int]:
    """How many tokens each of ERASER's bins removes in a sentence of ``t`` tokens (at least 1)."""
    return [max(1, math.ceil(f * t)) for f in ERASER_FRACTIONS]


def _descending(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")


# --- the lab for one sentence -----------------------------------------------------------------------


@dataclass
class SentenceLab:
    """Every method's token scores for one sentence and how faithful each is. Lists, for JSON."""

    text: str
    tokens: list[str]
    unknown_tokens: list[str]
    label: str  # the predicted class, whose probability the curves follow
    probabilities: dict[str, float]
    methods: list[str]
    titles: dict[str, str]
    measures: dict[str, str]
    scores: dict[str, list[float]]  # method → (T,)
    kendall: list[list[float | None]]  # (M, M), methods' order; None where τ is undefined (a constant score)
    deletion: dict[str, list[float]]  # method or "random" → p(label) with the top k removed, k = 0…T
    insertion: dict[str, list[float]]  # … with only the top k kept
    comprehensiveness: dict[str, float]  # method or "random": mean p drop over ERASER's bins (higher = more faithful)
    sufficiency: dict[str, float]  # … p drop keeping only the top tokens (lower = more faithful)
    permutation_tvd: list[float]  # Jain & Wallace: output change for each shuffle of the last layer's attention
    shapley: str  # how the Shapley values were computed (exact or sampled), "" without them
    seed: int
    notes: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def _contexts(model: AttentionClassifier, encoded: Sequence[Encoded], batch: Batch, rngs: Sequence[np.random.Generator],
              *, ig_steps: int, shapley_permutations: int, shapley_exact_tokens: int) -> list[SentenceContext]:
    """The sentences of ``batch`` (collated from ``encoded``) through the model at once, a context each."""
    device = model.head.weight.device
    extra = batch.extra.to(device) if batch.extra is not None else None
    casing = batch.casing.to(device) if batch.casing is not None else None
    with evaluating(model):
        features = model.embed(batch.ids.to(device), extra, casing)  # (S, T, F)
        logits, attention = model.forward_features(features, batch.mask.to(device))  # (S, C), (maps, S, H, T, T)
    probabilities = torch.softmax(logits, -1)
    out = []
    for s, (enc, rng) in enumerate(zip(encoded, rngs, strict=True)):
        t = len(enc.ids)
        out.append(SentenceContext(model, enc, features[s : s + 1, :t], attention[:, s, :, :t, :t], probabilities[s],
                                   int(probabilities[s].argmax()), rng, ig_steps, shapley_permutations,
                                   shapley_exact_tokens))
    return out


def _evaluation(ctx: SentenceContext, methods: Sequence[Method], n_random: int, n_permutations: int, *,
                whole_curves: bool = True) -> Generator[Request, Any, dict]:
    """Scores, curves, ERASER numbers and the permutation test for one sentence context, as a generator of
    requests (:func:`run_side_by_side` runs it). Without ``whole_curves`` the curves are computed at ERASER's
    bins alone (NaN elsewhere): all that comprehensiveness and sufficiency read, a fifth of the passes."""
    t = ctx.n_tokens
    scores = {}
    for m in methods:
        scores[m.name] = yield from m.steps(ctx)
    orders = {name: _descending(s) for name, s in scores.items()}
    random_orders = [ctx.rng.permutation(t) for _ in range(n_random)]
    ks = np.arange(t + 1) if whole_curves else np.array(sorted(set(eraser_ks(t))))  # the points of each curve
    masks = _order_masks(np.stack([*orders.values(), *random_orders]), ks)  # (orders, del/ins, points, T)
    at_ks = (yield Keep(masks.reshape(-1, t))).reshape(masks.shape[:3])  # (orders, del/ins, points)
    p = np.full((*at_ks.shape[:2], t + 1), np.nan)
    p[..., ks] = at_ks  # (orders, del/ins, T+1)
    full = float(ctx.probabilities[ctx.target])
    deletion = {name: p[i, 0] for i, name in enumerate(orders)}
    insertion = {name: p[i, 1] for i, name in enumerate(orders)}
    deletion["random"], insertion["random"] = p[len(orders):, 0].mean(0), p[len(orders):, 1].mean(0)
    # random: from its mean curve, which equals the mean of its orders' numbers (both are linear)
    bins = eraser_ks(t)
    comprehensiveness = dict(zip(deletion, (full - np.stack(list(deletion.values()))[:, bins]).mean(-1).tolist(), strict=True))
    sufficiency = dict(zip(insertion, (full - np.stack(list(insertion.values()))[:, bins]).mean(-1).tolist(), strict=True))
    # ERASER's numbers: the mean drop in probability over the bins, top tokens removed (comprehensiveness) or kept
    names = list(scores)
    tau = kendall_matrix([scores[name] for name in names])
    tvd = yield from _permutation_tvd(ctx, n_permutations)
    return dict(scores=scores, deletion=deletion, insertion=insertion, comprehensiveness=comprehensiveness,
                sufficiency=sufficiency, kendall=tau, permutation_tvd=tvd)


def _permutation_tvd(ctx: SentenceContext, n: int) -> Generator[Request, Any, list[float]]:
    """Jain & Wallace's test: total variation distance between the output distributions with the
    last layer's (or the pooling attention's) weights and with them shuffled over the keys, for
    ``n`` shuffles."""
    t = ctx.n_tokens
    if n == 0 or t < 2:
        return []
    orders = torch.from_numpy(np.stack([ctx.rng.permutation(t) for _ in range(n)]))  # (n, T)
    shuffled = yield Shuffle(orders)  # (n, C)
    return (0.5 * (shuffled - ctx.probabilities.double()).abs().sum(-1)).cpu().tolist()


def available_methods(model: AttentionClassifier, names: Sequence[str] | None = None) -> list[Method]:
    """The methods of :data:`METHODS` this model has (all of them, or those ``names``)."""
    if names is not None:
        unknown = [n for n in names if n not in METHODS]
        if unknown:
            raise ConfigError(f"method(s) {unknown} are not known", f"choose from {', '.join(METHODS)}")
    return [m for m in METHODS.values() if m.available(model) and (names is None or m.name in names)]


def sentence_lab(
    model: AttentionClassifier,
    encoder: TextEncoder,
    label_names: Sequence[str],
    text: str,
    *,
    methods: Sequence[str] | None = None,
    seed: int = 0,
    ig_steps: int = 64,
    shapley_permutations: int = 16,
    shapley_exact_tokens: int = SHAPLEY_EXACT_TOKENS,
    n_random: int = 10,
    n_permutations: int = 20,
) -> SentenceLab:
    """Every method's token importance for ``text``, their agreement and their faithfulness curves.

    The curves follow the predicted class's probability; ``n_random`` random orders are averaged
    for the random baseline; ``n_permutations`` shuffles of the last layer's attention give the
    permutation test. Shapley values are exact (2^T masked rows) for up to ``shapley_exact_tokens``
    tokens, sampled over ``shapley_permutations`` random orders above. The same ``seed`` gives the
    same numbers. Raises ``EmbeddingError`` if ``text`` is empty or no word of it is known.

    Shape:
        T tokens, M methods: scores[m] (T,), kendall (M, M), deletion[m] / insertion[m] (T+1,).

    Example:
        >>> lab = sentence_lab(run.model, run.encoder, run.label_names, "a great movie")
        >>> lab.comprehensiveness["leave_one_out"] >= lab.comprehensiveness["random"]
        True
    """
    chosen = available_methods(model, methods)
    encoded, batch = encoder.encode_for_model(text)
    (ctx,) = _contexts(model, [encoded], batch, [np.random.default_rng(seed)], ig_steps=ig_steps,
                       shapley_permutations=shapley_permutations, shapley_exact_tokens=shapley_exact_tokens)
    (got,) = run_side_by_side([ctx], [_evaluation(ctx, chosen, n_random, n_permutations)])
    names = [m.name for m in chosen]
    probs = ctx.probabilities.tolist()
    return SentenceLab(
        text=text,
        tokens=list(encoded.tokens),
        unknown_tokens=list(encoded.unknown),
        label=label_names[ctx.target],
        probabilities={name: round(p, 6) for name, p in zip(label_names, probs, strict=True)},
        methods=names,
        titles={m.name: m.title for m in chosen},
        measures={m.name: m.measures for m in chosen},
        scores={k: v.tolist() for k, v in got["scores"].items()},
        kendall=got["kendall"],
        deletion={k: v.tolist() for k, v in got["deletion"].items()},
        insertion={k: v.tolist() for k, v in got["insertion"].items()},
        comprehensiveness=got["comprehensiveness"],
        sufficiency=got["sufficiency"],
        permutation_tvd=got["permutation_tvd"],
        shapley=_shapley_words(ctx) if "shapley" in names else "",
        seed=seed,
        notes=encoded.notes,
    )


def _shapley_words(ctx: SentenceContext) -> str:
    """How this sentence's Shapley values were computed, for the page."""
    t = ctx.n_tokens
    if t <= ctx.shapley_exact_tokens:
        return f"exact: every one of the {2**t:,} subsets of its {t} words"
    return (f"sampled: {ctx.shapley_permutations} random orders of its {t} words (exact up to "
            f"{ctx.shapley_exact_tokens} words: 2^{ctx.shapley_exact_tokens} = {2**ctx.shapley_exact_tokens:,} subsets)")


# --- a whole run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """How far :func:`run_report` has got: ``done`` of ``total`` steps of ``stage``."""

    stage: str  # "heads" (knock-out passes over the data) | "sentences" (methods, curves, permutation test)
    done: int
    total: int


@dataclass
class RunReport:
    """Faithfulness over a set of labelled sentences (by default the run's validation rows). Lists, for JSON."""

    n: int  # sentences scored
    skipped: int  # sentences with no known word, left out
    labels: list[str]
    accuracy: float
    loss: float  # mean cross entropy
    knock_out_mode: str
    head_accuracy: list[list[float]]  # (L, H), (L + 1, H) with a pooling attention: accuracy with that head alone off
    head_loss: list[list[float]]  # (L, H)
    pruning_order: list[str]  # heads (head_name), least important first (smallest loss when knocked out alone)
    pruning_accuracy: list[float]  # accuracy with the first k heads of pruning_order off, k = 0…L·H
    methods: list[str]
    titles: dict[str, str]
    measures: dict[str, str]
    comprehensiveness: dict[str, float]  # method or "random": mean over the sentences
    sufficiency: dict[str, float]
    kendall: list[list[float | None]]  # (M, M) mean τ over the sentences where it is defined
    permutation_tvd: list[float]  # per sentence: the median TVD over its shuffles
    tvd_histogram: dict[str, list[float]]  # {"edges": 11 bin edges from 0, "counts": 10 counts}
    shapley: str  # how the Shapley values were computed (exact up to some length, sampled above), "" without them
    seed: int

    def to_dict(self) -> dict:
        return asdict(self)


class _KnockOutPasses:
    """The report's knock-out passes over sentences in batches (``training.length_batches``). Each batch's tokens
    as they enter every map are kept from one pass, so a pass that knocks out heads of map l and above runs those
    maps alone: the numbers of whole passes to the bit (``tests/core/test_faithfulness.py``)."""

    def __init__(self, model: AttentionClassifier, batches: Sequence[tuple[list[int], Batch]], n: int) -> None:
        self.model, self.batches, self.n = model, batches, n
        self.entering: list[list[Hidden]] = []  # per batch, per map
        with evaluating(model):
            for _, batch in batches:
                hidden = [model.enter(model.embed(batch.ids, batch.extra, batch.casing), batch.mask)]
                for layer in range(1, model.cfg.n_attention_maps):
                    hidden.append(model.advance(hidden[-1], layer))
                self.entering.append(hidden)

    def probabilities(self, heads: Sequence[tuple[int, int]], mode: str) -> np.ndarray:
        """Class probabilities (n, C) with ``heads`` knocked out (NaN for the rows the batches leave out)."""
        edit = knock_out(heads, self.model.cfg, mode)
        lowest = min((layer for layer, _ in heads), default=self.model.cfg.n_attention_maps - 1)
        out = np.full((self.n, self.model.cfg.n_classes), np.nan)
        with evaluating(self.model):
            for (rows, _), hidden in zip(self.batches, self.entering, strict=True):
                logits, _ = self.model.forward_from(hidden[lowest], need_weights=False, edit_attention=edit)
                out[rows] = torch.softmax(logits, -1).double().numpy()
        return out


def _labelled(run_labels: Sequence[str], texts: Sequence[str], labels: Sequence[str] | Sequence[int]) -> list[int]:
    if len(texts) != len(labels):
        raise DataError(f"{len(texts)} texts but {len(labels)} labels", "give one label per sentence")
    if all(isinstance(y, (int, np.integer)) for y in labels):
        bad = sorted({int(y) for y in labels if not 0 <= int(y) < len(run_labels)})
        if bad:
            raise DataError(f"label ids {bad} are not classes of the run", f"the run has {len(run_labels)} classes")
        return [int(y) for y in labels]
    index = {name: i for i, name in enumerate(run_labels)}
    missing = sorted(set(map(str, labels)) - set(index))
    if missing:
        raise DataError(f"labels {missing} are not among the model's labels {list(run_labels)}",
                        "use data with the labels the run was trained on (or pick the right --label-col)")
    return [index[str(y)] for y in labels]


def _accuracy_loss(probs: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    picked = probs[np.arange(len(y)), y]
    return float((probs.argmax(1) == y).mean()), float(-np.log(np.clip(picked, 1e-12, None)).mean())


def run_report(
    model: AttentionClassifier,
    encoder: TextEncoder,
    label_names: Sequence[str],
    texts: Sequence[str],
    labels: Sequence[str] | Sequence[int],
    *,
    knock_out_mode: str = "zero",
    methods: Sequence[str] | None = None,
    seed: int = 0,
    ig_steps: int = 32,
    shapley_permutations: int = 8,
    shapley_exact_tokens: int = REPORT_SHAPLEY_EXACT_TOKENS,
    n_random: int = 5,
    n_permutations: int = 20,
    on_progress: Callable[[Progress], None] | None = None,
    sentences_per_pass: int = 32,
) -> RunReport:
    """Head knock-out, method faithfulness and the permutation test over labelled sentences.

    ``labels`` are the run's class ids or label names. Sentences with no known word are left
    out and counted in ``skipped``. Deterministic for a ``seed``; ``on_progress`` is called
    after each knock-out pass and each sentence. ``sentences_per_pass`` sentences of similar length
    are scored side by side (:func:`run_side_by_side`); 1 scores them one by one, to the same numbers.
    Shapley values are exact for sentences of up to ``shapley_exact_tokens`` tokens, sampled over
    ``shapley_permutations`` random orders in longer ones.

    Example:
        >>> texts, labels = run.validation
        >>> report = run_report(run.model, run.encoder, run.label_names, texts, labels)
        >>> report.comprehensiveness["leave_one_out"] > report.comprehensiveness["random"]
        True
    """
    from attention_core.training import length_batches  # here: training.py imports gensim

    cfg = model.cfg
    knock_out([], cfg, knock_out_mode)  # checks the mode
    chosen = available_methods(model, methods)
    y_all = np.asarray(_labelled(label_names, texts, labels))
    encoded = [encoder.encode(text) for text in texts]
    readable = [i for i, enc in enumerate(encoded) if enc.readable]
    if not readable:
        raise EmbeddingError("no sentence has a word the run knows", "check the text column and the run's word vectors")
    kept_texts = [texts[i] for i in readable]
    y = y_all[readable]
    heads = [(layer, head) for layer in range(cfg.n_attention_maps) for head in range(cfg.n_heads)]
    total_passes = 2 * len(heads) + 1
    done = 0

    def tick(stage: str, total: int) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(Progress(stage, done, total))

    passes = _KnockOutPasses(model, length_batches(encoder, kept_texts, KNOCK_OUT_BATCH, encoded=[encoded[i] for i in readable]),
                             len(kept_texts))

    def scored(off: list[tuple[int, int]]) -> tuple[float, float]:
        result = _accuracy_loss(passes.probabilities(off, knock_out_mode), y)
        tick("heads", total_passes)
        return result

    accuracy, loss = scored([])
    single = {hd: scored([hd]) for hd in heads}
    pruning = sorted(heads, key=lambda hd: (single[hd][1], hd))
    pruning_accuracy = [accuracy] + [scored(pruning[: k + 1])[0] for k in range(len(heads))]

    names = [m.name for m in chosen]
    comprehensiveness: dict[str, list[float]] = {name: [] for name in [*names, "random"]}
    sufficiency: dict[str, list[float]] = {name: [] for name in [*names, "random"]}
    tau_sum, tau_count = np.zeros((len(names), len(names))), np.zeros((len(names), len(names)))
    tvd: list[float] = []
    done = 0
    evaluated: dict[int, dict] = {}
    by_length = sorted(readable, key=lambda i: len(encoded[i].ids))  # little padding in a group
    exact = sum(len(encoded[i].ids) <= shapley_exact_tokens for i in readable)
    for start in range(0, len(by_length), sentences_per_pass):
        group = by_length[start : start + sentences_per_pass]
        contexts = _contexts(model, [encoded[i] for i in group], encoder.collate([encoded[i] for i in group]),
                             [np.random.default_rng([seed, i]) for i in group], ig_steps=ig_steps,
                             shapley_permutations=shapley_permutations, shapley_exact_tokens=shapley_exact_tokens)
        got = run_side_by_side(contexts, [_evaluation(ctx, chosen, n_random, n_permutations, whole_curves=False)
                                          for ctx in contexts])
        for i, result in zip(group, got, strict=True):
            evaluated[i] = result
            tick("sentences", len(readable))
    for i in readable:
        got = evaluated.pop(i)
        for name in comprehensiveness:
            comprehensiveness[name].append(got["comprehensiveness"][name])
            sufficiency[name].append(got["sufficiency"][name])
        tau = np.array([[np.nan if v is None else v for v in row] for row in got["kendall"]])
        tau_sum += np.nan_to_num(tau)
        tau_count += ~np.isnan(tau)
        if got["permutation_tvd"]:
            tvd.append(float(np.median(got["permutation_tvd"])))

    mean_tau = np.divide(tau_sum, tau_count, out=np.full_like(tau_sum, np.nan), where=tau_count > 0)
    top = max(0.05, math.ceil(max(tvd, default=0.0) * 20) / 20)  # the histogram's range: up to the largest, in 0.05s
    counts, edges = np.histogram(tvd, bins=10, range=(0.0, top))
    return RunReport(
        n=len(readable),
        skipped=len(texts) - len(readable),
        labels=list(label_names),
        accuracy=accuracy,
        loss=loss,
        knock_out_mode=knock_out_mode,
        head_accuracy=[[single[(layer, h)][0] for h in range(cfg.n_heads)] for layer in range(cfg.n_attention_maps)],
        head_loss=[[single[(layer, h)][1] for h in range(cfg.n_heads)] for layer in range(cfg.n_attention_maps)],
        pruning_order=[head_name(*hd, cfg) for hd in pruning],
        pruning_accuracy=pruning_accuracy,
        methods=names,
        titles={m.name: m.title for m in chosen},
        measures={m.name: m.measures for m in chosen},
        comprehensiveness={k: float(np.mean(v)) for k, v in comprehensiveness.items()},
        sufficiency={k: float(np.mean(v)) for k, v in sufficiency.items()},
        kendall=[[None if np.isnan(v) else float(v) for v in row] for row in mean_tau],
        permutation_tvd=tvd,
        tvd_histogram={"edges": edges.tolist(), "counts": counts.astype(float).tolist()},
        shapley=_shapley_report_words(exact, len(readable), shapley_exact_tokens, shapley_permutations)
        if "shapley" in names else "",
        seed=seed,
    )


def _shapley_report_words(exact: int, n: int, exact_tokens: int, permutations: int) -> str:
    """How the report's Shapley values were computed, for the page: ``exact`` of ``n`` sentences exactly."""
    return (f"exact (every subset of the words) in the {exact:,} of {n:,} sentences of up to {exact_tokens} words, "
            f"sampled ({permutations} random orders) in the {n - exact:,} longer ones")
