"""Backpropagation through the Julia post's attention model, written out by hand: the Backpropagation page.

The seed post ("Attention from Scratch in Julia") derives every gradient of its model —
one attention head with biases, a linear layer, mean pooling, softmax and cross entropy —
and applies them with per-example SGD. This module derives them with the correct formulas,
one named tensor per step, so that the explainer page can show each gradient in the order
the post derives it, next to autograd's (:func:`gradient_report`), and next to what the
post's own code computes (:func:`post_code_comparison`; :func:`post_backward` with
``julia=True``: its softmax Jacobian is built from the first column of α and applied to
every row, and its scores are divided by √length(q) = √(d·n) rather than √d).
The trainer's fast step for the ``seed`` preset, the same gradients fused for speed, is
:class:`attention_core.post_sgd.PostModelSGDStep`.

Notation (row-major, one sentence): x (n, d) inputs with the position index appended,
q = x Qᵀ + q_b, k = x Kᵀ + k_b, v = x Vᵀ + v_b (n, d); s = q kᵀ · c with c = 1/√d;
α = softmax(s) row-wise (n, n); z = α v (n, d); h = mean over rows of z (d,);
logits = W h + b (C,); p = softmax(logits); L = −log p[y].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from attention_core.post_sgd import post_model_params


@dataclass
class PostForward:
    """Every intermediate of the seed model's forward pass for one sentence."""

    x: Tensor  # (n, d)
    q: Tensor  # (n, d)
    k: Tensor  # (n, d)
    v: Tensor  # (n, d)
    scores: Tensor  # (n, n) q kᵀ · c
    alpha: Tensor  # (n, n)
    z: Tensor  # (n, d) context vectors
    pooled: Tensor  # (d,)
    logits: Tensor  # (C,)
    p: Tensor  # (C,)
    loss: Tensor  # ()
    scale: float


def post_forward(x: Tensor, y: int, params: dict[str, Tensor], *, scale: float | None = None) -> PostForward:
    """The seed model's forward pass. ``params``: Q, Qb, K, Kb, V, Vb (d×d, d), W (C×d), b (C)."""
    n, d = x.shape
    c = 1.0 / math.sqrt(d) if scale is None else scale
    q = x @ params["Q"].T + params["Qb"]  # (n, d)
    k = x @ params["K"].T + params["Kb"]
    v = x @ params["V"].T + params["Vb"]
    scores = (q @ k.T) * c  # (n, n)
    alpha = torch.softmax(scores, dim=-1)
    z = alpha @ v  # (n, d)
    pooled = z.mean(0)  # (d,)
    logits = params["W"] @ pooled + params["b"]  # (C,)
    p = torch.softmax(logits, dim=-1)
    return PostForward(x, q, k, v, scores, alpha, z, pooled, logits, p, -torch.log(p[y]), c)


def post_backward(fw: PostForward, y: int, params: dict[str, Tensor], *, julia: bool = False) -> dict[str, Tensor]:
    """Every gradient of the seed model, in the order the post derives them.

    With ``julia=True`` the post's own choices are reproduced: the softmax Jacobian is the
    one of α's first column, applied to every row (its ``α[j]`` is linear indexing).
    (Its √(d·n) scaling is a forward-pass choice: pass ``scale`` to :func:`post_forward`.)
    """
    n = fw.x.shape[0]
    onehot = torch.zeros_like(fw.p)
    onehot[y] = 1.0
    g: dict[str, Tensor] = {}
    g["dL/dlogits"] = fw.p - onehot  # ∂L/∂p in the post: p − y
    g["dL/dW"] = torch.outer(g["dL/dlogits"], fw.pooled)  # (C, d)
    g["dL/db"] = g["dL/dlogits"]
    g["dL/dpooled"] = params["W"].T @ g["dL/dlogits"]  # (d,)
    g["dL/dz"] = g["dL/dpooled"].expand(n, -1) / n  # mean pooling spreads it evenly (n, d)
    g["dL/dalpha"] = g["dL/dz"] @ fw.v.T  # (n, n)
    g["dL/dv"] = fw.alpha.T @ g["dL/dz"]  # (n, d)
    if julia:
        a = fw.alpha[:, 0]
        jac = torch.diag(a) - torch.outer(a, a)  # one n×n Jacobian for every row
        g["softmax Jacobian"] = jac.expand(n, n, n)
        g["dL/dscores"] = g["dL/dalpha"] @ jac
    else:
        # Row i: J_i = diag(α_i) − α_i α_iᵀ, so dL/ds_i = α_i ⊙ (dL/dα_i − ⟨dL/dα_i, α_i⟩).
        g["softmax Jacobian"] = torch.diag_embed(fw.alpha) - fw.alpha[:, :, None] * fw.alpha[:, None, :]
        g["dL/dscores"] = fw.alpha * (g["dL/dalpha"] - (g["dL/dalpha"] * fw.alpha).sum(-1, keepdim=True))
    ds = g["dL/dscores"] * fw.scale  # through the scaling
    g["dL/dq"] = ds @ fw.k  # (n, d)
    g["dL/dk"] = ds.T @ fw.q  # (n, d)
    g["dL/dQ"] = g["dL/dq"].T @ fw.x  # (d, d)
    g["dL/dK"] = g["dL/dk"].T @ fw.x
    g["dL/dV"] = g["dL/dv"].T @ fw.x
    g["dL/dQb"] = g["dL/dq"].sum(0)
    g["dL/dKb"] = g["dL/dk"].sum(0)
    g["dL/dVb"] = g["dL/dv"].sum(0)
    return g


# --- the explainer page: every gradient, checked against autograd, and the post's own code ----------


@dataclass(frozen=True)
class PostInputs:
    """One sentence as the seed post feeds it to the model."""

    tokens: tuple[str, ...]  # the words kept, in order
    unknown: tuple[str, ...]  # words the embedding table does not know (dropped, as in the post)
    truncated: int  # words cut off after ``max_tokens``
    x: Tensor  # (n, E+1) float64: the word vectors with the position index 0, 1, … appended


def post_inputs(text: str, embeddings, *, max_tokens: int = 64) -> PostInputs:
    """A sentence → the seed model's input x: whitespace tokens, unknown words dropped, position appended.

    ``embeddings`` is an :class:`~attention_core.embeddings.Embeddings` (the seed uses GloVe's
    top 10,000 words). Raises :class:`~attention_core.errors.EmbeddingError` if no word is known.

    Shape:
        → x (n, E+1), n = known words (at most ``max_tokens``).

    Example:
        >>> inp = post_inputs("very sad as they both fail", load_embeddings(EmbeddingSource(limit=10_000)))
        >>> inp.tokens, tuple(inp.x.shape), inp.x[:, -1].tolist()
        (('very', 'sad', 'as', 'they', 'both', 'fail'), (6, 51), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    """
    from attention_core.encoding import read_sentence

    words = read_sentence(text, embeddings, "whitespace")
    known, unknown = words.known_tokens, tuple(words.unknown_tokens)
    kept = known[:max_tokens]
    vectors = torch.from_numpy(embeddings.vectors(kept)).double()  # (n, E)
    position = torch.arange(len(kept), dtype=torch.float64)[:, None]  # (n, 1): the post's vcat(x, 0:n-1)
    return PostInputs(tuple(kept), unknown, len(known) - len(kept), torch.cat([vectors, position], dim=1))


def post_params_float64(model: torch.nn.Module) -> dict[str, Tensor]:
    """Detached float64 copies of a seed-shaped model's weights, under the post's names."""
    return {k: v.detach().to(torch.float64).clone() for k, v in post_model_params(model).items()}


@dataclass(frozen=True)
class GradientCheck:
    """One gradient of the seed model: the hand-written value next to autograd's."""

    name: str  # e.g. "∂L/∂Q"
    step: str  # the post's section: "cross entropy", "pooling", "feed-forward", … "biases"
    formula: str  # LaTeX, row-major notation of this module
    axes: tuple[str, ...]  # per dimension: class | token | dim (of q, k, v, z) | input (x's features) | row
    hand: Tensor  # from post_backward
    autograd: Tensor  # from torch.autograd on the post's forward pass
    max_abs_diff: float  # max |hand − autograd|

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.hand.shape)


def _post_graph(x: Tensor, y: int, params: dict[str, Tensor], scale: float) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The post's forward pass, arranged as it writes it (f = W z + b per token, then pooling), on autograd.

    Returns (parameters as fresh leaves that require grad, named intermediates incl. the loss).
    """
    leaves = {k: v.detach().clone().requires_grad_() for k, v in params.items()}
    q = x @ leaves["Q"].T + leaves["Qb"]  # (n, d)
    k = x @ leaves["K"].T + leaves["Kb"]
    v = x @ leaves["V"].T + leaves["Vb"]
    e = (q @ k.T) * scale  # (n, n) scores, the post's e
    alpha = torch.softmax(e, dim=-1)
    z = alpha @ v  # (n, d) context vectors
    f = z @ leaves["W"].T + leaves["b"]  # (n, C) the feed-forward layer, per token
    p = f.mean(0)  # (C,) average pooling: the post's p before its softmax
    loss = -torch.log_softmax(p, dim=-1)[y]
    return leaves, {"p": p, "f": f, "z": z, "v": v, "alpha": alpha, "e": e, "q": q, "k": k, "loss": loss}


# (name, the post's section, formula, axes, key in post_backward's dict or None, key in autograd's)
_CHECKS = (
    ("∂L/∂p", "cross entropy", r"\frac{\partial L}{\partial p} = \operatorname{softmax}(p) - y", ("class",), "dL/dlogits", "p"),
    ("∂L/∂f", "pooling", r"\frac{\partial L}{\partial f_i} = \frac{1}{n}\,\frac{\partial L}{\partial p}", ("token", "class"),
     None, "f"),
    ("∂L/∂W", "feed-forward", r"\frac{\partial L}{\partial W} = \sum_i \frac{\partial L}{\partial f_i}\, z_i^\top",
     ("class", "dim"), "dL/dW", "W"),
    ("∂L/∂b", "feed-forward", r"\frac{\partial L}{\partial b} = \sum_i \frac{\partial L}{\partial f_i}", ("class",), "dL/db", "b"),
    ("∂L/∂z", "context vectors", r"\frac{\partial L}{\partial z_i} = W^\top \frac{\partial L}{\partial f_i}",
     ("token", "dim"), "dL/dz", "z"),
    ("∂L/∂v", "values", r"\frac{\partial L}{\partial v} = \alpha^\top \frac{\partial L}{\partial z}", ("token", "dim"),
     "dL/dv", "v"),
    ("∂L/∂α", "attention weights", r"\frac{\partial L}{\partial \alpha} = \frac{\partial L}{\partial z}\, v^\top",
     ("token", "token"), "dL/dalpha", "alpha"),
    ("∂α/∂e (softmax Jacobian)", "softmax",
     r"J_i = \frac{\partial \alpha_i}{\partial e_i} = \operatorname{diag}(\alpha_i) - \alpha_i \alpha_i^\top",
     ("row", "token", "token"), "softmax Jacobian", None),
    ("∂L/∂e", "scores", r"\frac{\partial L}{\partial e_i} = J_i\, \frac{\partial L}{\partial \alpha_i}", ("token", "token"),
     "dL/dscores", "e"),
    ("∂L/∂q", "queries", r"\frac{\partial L}{\partial q} = c\, \frac{\partial L}{\partial e}\, k,\quad c = \tfrac{1}{\sqrt{d}}",
     ("token", "dim"), "dL/dq", "q"),
    ("∂L/∂k", "keys", r"\frac{\partial L}{\partial k} = c\, \Big(\frac{\partial L}{\partial e}\Big)^{\!\top} q",
     ("token", "dim"), "dL/dk", "k"),
    ("∂L/∂Q", "weights", r"\frac{\partial L}{\partial Q} = \Big(\frac{\partial L}{\partial q}\Big)^{\!\top} x",
     ("dim", "input"), "dL/dQ", "Q"),
    ("∂L/∂K", "weights", r"\frac{\partial L}{\partial K} = \Big(\frac{\partial L}{\partial k}\Big)^{\!\top} x",
     ("dim", "input"), "dL/dK", "K"),
    ("∂L/∂V", "weights", r"\frac{\partial L}{\partial V} = \Big(\frac{\partial L}{\partial v}\Big)^{\!\top} x",
     ("dim", "input"), "dL/dV", "V"),
    ("∂L/∂Qb", "biases", r"\frac{\partial L}{\partial Q_b} = \sum_i \frac{\partial L}{\partial q_i}", ("dim",), "dL/dQb", "Qb"),
    ("∂L/∂Kb", "biases", r"\frac{\partial L}{\partial K_b} = \sum_i \frac{\partial L}{\partial k_i}", ("dim",), "dL/dKb", "Kb"),
    ("∂L/∂Vb", "biases", r"\frac{\partial L}{\partial V_b} = \sum_i \frac{\partial L}{\partial v_i}", ("dim",), "dL/dVb", "Vb"),
)


def gradient_report(x: Tensor, y: int, params: dict[str, Tensor]) -> list[GradientCheck]:
    """Every gradient the seed post derives, in its order: :func:`post_backward` next to autograd.

    The hand-written values come from :func:`post_backward` on :func:`post_forward`; the
    reference is ``torch.autograd`` on the post's own arrangement of the forward pass (a
    feed-forward layer per token, then average pooling), so the two share no code. Use
    float64 inputs and parameters: the differences are then ~1e-17.

    Shape:
        x (n, d), y class index, params as for :func:`post_forward`
        → 17 checks; the softmax Jacobian is stacked per row, (n, n, n).

    Example:
        >>> checks = gradient_report(x.double(), 2, {k: v.double() for k, v in params.items()})
        >>> max(c.max_abs_diff for c in checks) < 1e-12
        True
    """
    from torch.autograd.functional import jacobian

    n, d = x.shape
    scale = 1.0 / math.sqrt(d)
    params = {k: v.detach() for k, v in params.items()}
    hand = post_backward(post_forward(x, y, params), y, params)
    hand["dL/df"] = hand["dL/dlogits"].expand(n, -1) / n  # (n, C): pooling spreads ∂L/∂p evenly

    leaves, graph = _post_graph(x, y, params, scale)
    names = [ref for *_, ref in _CHECKS if ref is not None]
    wrt = [graph[r] if r in graph else leaves[r] for r in names]
    reference = dict(zip(names, torch.autograd.grad(graph["loss"], wrt), strict=True))
    # Autograd's softmax Jacobian: the Jacobian of each row of α with respect to that row of e.
    rows = graph["e"].detach()
    reference["jacobian"] = torch.stack([jacobian(lambda r: torch.softmax(r, dim=-1), row) for row in rows])  # (n, n, n)

    checks = []
    for name, step, formula, axes, hand_key, ref_key in _CHECKS:
        h = hand[hand_key if hand_key is not None else "dL/df"].detach()
        a = reference[ref_key if ref_key is not None else "jacobian"].detach()
        checks.append(GradientCheck(name, step, formula, axes, h, a, float((h - a).abs().max()) if h.numel() else 0.0))
    return checks


@dataclass(frozen=True)
class Difference:
    """One quantity as the correct derivation computes it and as the post's code does."""

    name: str
    correct: Tensor
    post: Tensor

    @property
    def max_abs(self) -> float:
        return float((self.post - self.correct).abs().max())

    @property
    def relative(self) -> float:
        """‖post − correct‖ / ‖correct‖ (Frobenius); ``nan`` when the correct value is all zero."""
        norm = float(self.correct.norm())
        return float((self.post - self.correct).norm()) / norm if norm > 0 else float("nan")

    @property
    def norm_ratio(self) -> float:
        """‖post‖ / ‖correct‖: above 1 the post's value is larger overall; ``nan`` when the correct value is zero."""
        norm = float(self.correct.norm())
        return float(self.post.norm()) / norm if norm > 0 else float("nan")


@dataclass(frozen=True)
class PostCodeComparison:
    """Where the post's Julia code departs from the correct gradient, and by how much.

    * ``jacobian`` — (a) its softmax Jacobian is built from α's first column (``α[j]`` is
      linear indexing, α[j, 1]) and applied to every row; same forward pass, 1/√d.
    * ``scale`` — (b) its scores are divided by √length(q) = √(d·n), not √d: α and the
      (correct) gradients of both forward passes.
    * ``backward_scale`` — (c) its local gradients ∂e/∂q = kᵀ and ∂e/∂k = qᵀ leave out its
      own 1/√(d·n), so its ∂L/∂Q and ∂L/∂K are √(d·n) times too large: the post's full
      backprop (a and c) against the correct gradient of the post's own forward pass (b).
    """

    n: int
    d: int
    scale: float  # 1/√d
    post_scale: float  # 1/√(d·n)
    alpha: Tensor  # (n, n) with 1/√d
    post_alpha: Tensor  # (n, n) with 1/√(d·n)
    jacobians: Tensor  # (n, n, n) the correct Jacobian of each row
    post_jacobian: Tensor  # (n, n) the post's one Jacobian, from α's first column
    jacobian: list[Difference]
    scale_effect: list[Difference]
    backward_scale: list[Difference]

    @staticmethod
    def mean_largest_weight(alpha: Tensor) -> float:
        """How peaked attention is: the largest weight of each row, averaged (1/n = uniform)."""
        return float(alpha.max(dim=-1).values.mean())


def post_code_comparison(x: Tensor, y: int, params: dict[str, Tensor]) -> PostCodeComparison:
    """The three places the seed post's code computes something else than the correct gradient.

    See :class:`PostCodeComparison`. With one token (n = 1) all three agree with the correct
    values: α = [[1]], its first column is its only row, and √(d·n) = √d.

    Shape:
        x (n, d), params as for :func:`post_forward` → α (n, n), Jacobians (n, n, n) and (n, n).
    """
    n, d = x.shape
    params = {k: v.detach() for k, v in params.items()}
    fw = post_forward(x, y, params)
    right = post_backward(fw, y, params)
    first_column = post_backward(fw, y, params, julia=True)
    names = {"dL/dscores": "∂L/∂e", "dL/dQ": "∂L/∂Q", "dL/dK": "∂L/∂K", "dL/dV": "∂L/∂V"}
    jacobian = [Difference(label, right[key], first_column[key]) for key, label in names.items()]

    post_scale = 1.0 / math.sqrt(d * n)  # the post's sqrt(length(q)): q is d × n
    fw_post = post_forward(x, y, params, scale=post_scale)
    right_post = post_backward(fw_post, y, params)
    scale_effect = [Difference("α", fw.alpha, fw_post.alpha)] + [
        Difference(label, right[key], right_post[key]) for key, label in names.items() if key != "dL/dscores"
    ]

    # The post's backprop on its own forward pass: first-column Jacobian, and ∂e/∂q = kᵀ, ∂e/∂k = qᵀ
    # without the 1/√(d·n) its forward pass multiplied by (post_backward applies it: undo that).
    post_code = post_backward(fw_post, y, params, julia=True)
    backward_scale = [
        Difference(label, right_post[key], post_code[key] / (post_scale if key in ("dL/dQ", "dL/dK") else 1.0))
        for key, label in names.items() if key != "dL/dscores"
    ]
    return PostCodeComparison(
        n, d, fw.scale, post_scale, fw.alpha, fw_post.alpha, right["softmax Jacobian"],
        first_column["softmax Jacobian"][0], jacobian, scale_effect, backward_scale,
    )
