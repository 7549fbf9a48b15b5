"""Command line: ``python -m attention_core train | predict | evaluate | explain | faithfulness``.

The last line each command prints on stdout is one JSON object; progress goes to stderr.
Bad input exits with status 2 and a one-line ``error: …`` saying what is wrong and how to
fix it — never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from attention_core.errors import ConfigError, InputError, RunError

if TYPE_CHECKING:
    from collections.abc import Callable

    from attention_core.configs import ModelConfig, TrainConfig
    from attention_core.data import TextDataset
    from attention_core.embeddings import Embeddings
    from attention_core.runs import Prediction, Run
    from attention_core.training import EpochRecord, Trainer
    from attention_core.workspaces import Workspace, WorkspaceStore

EXIT_BAD_INPUT = 2


class _Formatter(argparse.HelpFormatter):
    """argparse's, wrapping lines between words only: never inside "warm-up" or "all-MiniLM-L6-v2"."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, status 2, no usage dump
        self.exit(EXIT_BAD_INPUT, f"error: {message} — see `{self.prog} --help`\n")


def program_name(argv0: str | None = None) -> str:
    """How the user started us, for help and error lines: the installed command, or ``python -m attention_core``."""
    name = Path(argv0 if argv0 is not None else sys.argv[0]).name
    return "python -m attention_core" if name in ("__main__.py", "-m", "", "-c") else name


def _parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = _Parser(prog=prog or program_name(), description="Train, run and evaluate small attention classifiers.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p.commands = sub  # for main's extend

    t = sub.add_parser("train", help="train a model on a CSV and save the run")
    t.add_argument("csv", help="CSV with a text column and a label column")
    where = t.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="run folder to write: a new or empty folder (checked before training)")
    where.add_argument("--workspace", metavar="TOKEN_OR_LINK",
                       help="save into this workspace of a shared server (its private link or token) as --name")
    t.add_argument("--overwrite", action="store_true", help="replace the run already in --out (never other files)")
    from attention_core.presets import cli_help

    t.add_argument("--preset", default="default", help=cli_help())
    t.add_argument("--text-col", help="text column (default: detected)")
    t.add_argument("--label-col", help="label column (default: detected)")
    t.add_argument("--epochs", type=int, help="most epochs to train (default: the preset's; patience may stop sooner)")
    t.add_argument("--layers", type=int, dest="n_layers", help="attention layers (default: the preset's)")
    t.add_argument("--heads", type=int, dest="n_heads", help="heads per attention layer (default: the preset's)")
    t.add_argument("--lr", type=float, help="learning rate (default: the preset's)")
    t.add_argument("--batch-size", type=int, help="sentences per training step (default: the preset's)")
    t.add_argument("--seed", type=int, help="random seed of the split, the weights and the batches (default: the "
                   "preset's; the same seed gives the same run)")
    t.add_argument("--val-fraction", type=float, help="share of the rows held out for validation, e.g. 0.2 "
                   "(default: the preset's)")
    t.add_argument("--time-budget", type=float, metavar="SECONDS", help="stop training after this many seconds")
    t.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    t.add_argument("--threads", type=int, dest="num_threads", metavar="N",
                   help="torch CPU threads (default: chosen while training, up to one per core while "
                        "other processes leave the cores free, 1 beside a busy one)")
    t.add_argument("--embeddings", metavar="FILE", help="your own word2vec/GloVe file instead of GloVe 6B 50d")
    t.add_argument("--vocab-limit", type=int, help="use only the N most frequent words of the embeddings")
    t.add_argument("--name", help="the run's name (with --workspace: required, the name the app lists; "
                                  "otherwise shown in the app, default the directory name)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    _runs_root_argument(t)

    pr = sub.add_parser("predict", help="classify one sentence and show its attention")
    pr.add_argument("run", help="run directory (with --workspace: the run's name there)")
    pr.add_argument("text", help="the sentence")
    pr.add_argument("--embeddings", metavar="FILE", help="word-vector file, if the run's has moved")
    pr.add_argument("--knock-out", metavar="HEADS", nargs="?", const="", default="",
                    help="heads to switch off, as layer.head from 1, e.g. 1.2,2.4, and a pooling attention's as "
                         "pooling.head, e.g. pooling.1 (empty: none, the plain prediction)")
    _knock_out_mode_argument(pr)
    _workspace_arguments(pr)

    e = sub.add_parser("evaluate", help="accuracy, macro F1 and confusion of a run on a labelled CSV")
    e.add_argument("run", help="run directory (with --workspace: the run's name there)")
    e.add_argument("csv", help="labelled CSV")
    e.add_argument("--text-col", help="text column (default: detected)")
    e.add_argument("--label-col", help="label column (default: detected)")
    e.add_argument("--embeddings", metavar="FILE", help="word-vector file, if the run's has moved")
    _workspace_arguments(e)

    x = sub.add_parser("explain", help="every method's token importance for one sentence, and how faithful each is")
    x.add_argument("run", help="run directory (with --workspace: the run's name there)")
    x.add_argument("text", help="the sentence")
    _lab_arguments(x)

    f = sub.add_parser("faithfulness", help="head knock-out and each method's faithfulness over a labelled set")
    f.add_argument("run", help="run directory (with --workspace: the run's name there)")
    f.add_argument("csv", nargs="?", help="labelled CSV (default: the run's own validation sentences)")
    f.add_argument("--text-col", help="the CSV's text column (default: detected)")
    f.add_argument("--label-col", help="the CSV's label column (default: detected)")
    _knock_out_mode_argument(f)
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    _lab_arguments(f)
    return p


def _knock_out_mode_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--knock-out-mode", choices=("zero", "uniform"), default="zero",
                   help="zero: the heads' output is removed (default); uniform: they attend equally to every word")


def _lab_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of the random orders and samples (default 0)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch CPU threads (default: one per core that other processes leave free, read again as it "
                        "runs: 2 threads beside other work ran much slower than 1)")
    p.add_argument("--embeddings", metavar="FILE", help="word-vector file, if the run's has moved")
    _workspace_arguments(p)


def _runs_root_argument(p: argparse.ArgumentParser) -> None:
    from attention_core.workspaces import RUNS_ENV

    p.add_argument("--runs-root", metavar="DIR",
                   help=f"the shared server's runs folder, for --workspace (default: ${RUNS_ENV}, as for the app)")


def _workspace_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workspace", metavar="TOKEN_OR_LINK", help="read the run from this workspace of a shared server "
                                                                "(its private link or token)")
    _runs_root_argument(p)


def _workspace(args: argparse.Namespace) -> tuple[WorkspaceStore, Workspace]:
    """The store of the shared server's runs root and the workspace of ``--workspace``."""
    from attention_core.workspaces import RUNS_ENV, WorkspaceStore

    root = args.runs_root or os.environ.get(RUNS_ENV)
    if not root:
        raise ConfigError("--workspace needs the shared server's runs folder",
                          f"pass --runs-root DIR, or set {RUNS_ENV} as for the app")
    store = WorkspaceStore.from_env(root, {**os.environ, RUNS_ENV: root}, shared=True)
    return store, store.for_link(args.workspace)


def _run_dir(args: argparse.Namespace) -> str | Path:
    """The run that predict / evaluate read: a folder, or with --workspace a run's name there."""
    if args.workspace is None:
        return args.run
    store, workspace = _workspace(args)
    return store.find_run(workspace, args.run)


def check_device(name: str) -> str:
    import torch

    if name == "cpu":
        return name
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError("--device cuda was asked for but no CUDA GPU is available here", "use --device cpu")
        return name
    raise ConfigError(f"--device {name!r} is not known", "use cpu or cuda")


def train_command(args: argparse.Namespace, into: Callable[[argparse.Namespace, Path], dict] | None = None) -> dict:
    """``train``: check where the run goes (before any work), then train into it (``into``: this process, or what a
    program built on this one does instead, e.g. ``runner.cli``'s worker on a shared queue)."""
    from attention_core.run_folders import is_run_folder, prepare_destination

    out = args.out
    if args.workspace is not None:
        if not args.name:
            raise ConfigError("--workspace needs --name", "name the run, e.g. --name uci-1: the app lists it so")
        store, workspace = _workspace(args)
        out = store.run_path(workspace, args.name)
        if is_run_folder(out) and not args.overwrite:
            raise ConfigError(f"this workspace has a run named {args.name!r} already",
                              "choose another --name, or --overwrite to replace it")
        store.check_space(workspace)  # its disk limit ($ATTENTION_PLAYGROUND_WORKSPACE_MB), as in the app
    destination = prepare_destination(out, overwrite=args.overwrite)  # before any work: nothing to lose yet
    try:
        return (into or _train_into)(args, destination.path)
    except BaseException:
        destination.release()
        raise


def training_parts(args: argparse.Namespace) -> tuple[ModelConfig, TrainConfig, TextDataset, Embeddings | None]:
    """What ``train``'s options ask for: the configs (the preset's, with the options over them), the data set and
    the word vectors (None for a pretrained encoder). Prints the data set's summary to stderr."""
    from attention_core.data import load_dataset
    from attention_core.embeddings import EmbeddingSource, load_embeddings
    from attention_core.presets import get_preset, preset

    names = ("epochs", "n_layers", "n_heads", "lr", "batch_size", "seed", "val_fraction", "time_budget", "vocab_limit",
             "num_threads")
    overrides = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    pretrained = get_preset(args.preset).model.base is not None  # its own sizes and word pieces, no word vectors
    if pretrained:
        given = [option for option, name in (("--layers", "n_layers"), ("--heads", "n_heads"),
                                              ("--vocab-limit", "vocab_limit")) if name in overrides]
        if args.embeddings:
            given.append("--embeddings")
        if given:
            raise ConfigError(f"{', '.join(given)} do(es) not apply to the pretrained encoder of --preset {args.preset}",
                              "its sizes and vocabulary are the checkpoint's: leave them out")
    model_cfg, train_cfg = preset(args.preset, **overrides)
    if pretrained:
        embeddings = None
        dataset = load_dataset(args.csv, text_col=args.text_col, label_col=args.label_col)
    else:
        source = (
            EmbeddingSource("file", args.embeddings, limit=train_cfg.vocab_limit)
            if args.embeddings
            else EmbeddingSource(limit=train_cfg.vocab_limit)
        )
        embeddings = load_embeddings(source)
        dataset = load_dataset(args.csv, text_col=args.text_col, label_col=args.label_col,
                               is_known=embeddings.__contains__)
    print(dataset.report.summary(), file=sys.stderr)
    return model_cfg, train_cfg, dataset, embeddings


def _train_into(args: argparse.Namespace, out: Path) -> dict:
    from tqdm import tqdm

    from attention_core.runs import save_new_run, save_run
    from attention_core.training import Trainer

    device = check_device(args.device)  # before the data is read: a wrong device is the whole error
    model_cfg, train_cfg, dataset, embeddings = training_parts(args)
    trainer = Trainer(model_cfg, train_cfg, dataset, embeddings, device=device)

    def interrupt(signum: int, frame: object) -> None:  # Ctrl-C: stop cleanly and save what was learned
        print("\nstopping after this step (Ctrl-C again to abort)…", file=sys.stderr)
        trainer.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, interrupt)
    bar = tqdm(total=train_cfg.epochs, unit="epoch", file=sys.stderr, disable=args.quiet, dynamic_ncols=True)

    def on_epoch(rec) -> None:
        post = {"loss": f"{rec.train_loss:.4f}"}
        if rec.val_loss is not None:
            post.update(val_loss=f"{rec.val_loss:.4f}", val_acc=f"{rec.val_accuracy:.3f}")
        bar.set_postfix(post, refresh=False)
        bar.update(1)

    run = run_trainer(trainer, on_epoch=on_epoch, name=args.name or out.name)
    bar.close()
    try:
        save_run(run, out, overwrite=args.overwrite)
    except RunError as err:  # something was put into the folder while training: keep the run beside it
        out = save_new_run(run, out.parent, out.name)
        print(f"{err.message}: the run was saved to {out} instead", file=sys.stderr)
    return trained_summary(run, out)


def trained_summary(run: Run, out: Path) -> dict:
    """``train``'s JSON for ``run``, saved at ``out``; its message and verdict go to stderr."""
    from attention_core.metrics import run_verdict, verdict_fields

    if run.history.message:
        print(run.history.message, file=sys.stderr)
    verdict = run_verdict(run.history, run.label_names)
    if verdict is not None:
        print(verdict.message, file=sys.stderr)
    return {**run.history.summary(), **verdict_fields(verdict), "run": str(out)}


def run_trainer(trainer: Trainer, on_epoch: Callable[[EpochRecord], None] | None = None,
                name: str = "run") -> Run:
    """Run ``trainer`` as ``train`` does: on the CPU without ``--threads``, the thread count follows the machine's load
    (:func:`~attention_core.threads.training_threads`, as the app's training jobs). ``benchmarks/quality.py`` trains
    through this too."""
    from attention_core.threads import training_threads

    on_step = training_threads(trainer)
    return trainer.run(on_epoch=on_epoch, on_step=on_step, name=name)


def _predict(args: argparse.Namespace) -> dict:
    from attention_core.faithfulness import knock_out
    from attention_core.map_names import head_name, parse_heads
    from attention_core.runs import load_run

    run = load_run(_run_dir(args), embedding_file=args.embeddings)
    heads = parse_heads(args.knock_out, run.model_config)
    prediction = run.predict(args.text, edit_attention=knock_out(heads, run.model_config, args.knock_out_mode))
    last = run.model_config.n_attention_maps - 1  # the map prediction_summary shows
    print(prediction_summary(prediction, knocked_out=[h for layer, h in heads if layer == last],
                             map_name=run.model_config.map_names()[last]), file=sys.stderr)
    if not heads:
        return prediction.to_dict()
    names = [head_name(*hd, run.model_config) for hd in heads]
    how = "output removed" if args.knock_out_mode == "zero" else "attending equally to every word"
    print(f"heads knocked out ({args.knock_out_mode}: {how}): {', '.join(names)}", file=sys.stderr)
    return {**prediction.to_dict(), "knocked_out": names, "knock_out_mode": args.knock_out_mode}


def _lab_run(args: argparse.Namespace) -> tuple[Run, Callable[[], object]]:
    """The run the lab commands read, and what to call as their work goes: it sets torch's thread count
    (``--threads N``, or one per core other processes leave free: :class:`~attention_core.threads.FollowFreeCores`)."""
    import torch

    from attention_core.runs import load_run
    from attention_core.threads import FollowFreeCores

    if args.threads is None:
        follow: Callable[[], object] = FollowFreeCores()  # before loading: its first reading spans the load
    elif args.threads < 1:
        raise ConfigError(f"--threads {args.threads} is not valid", "use 1 or more")
    else:
        torch.set_num_threads(args.threads)
        follow = lambda: args.threads  # noqa: E731
    run = load_run(_run_dir(args), embedding_file=args.embeddings)
    follow()
    return run, follow


def _explain(args: argparse.Namespace) -> dict:
    from attention_core.faithfulness import sentence_lab

    run, _ = _lab_run(args)
    lab = sentence_lab(run.model, run.encoder, run.label_names, args.text, seed=args.seed)
    print(f"{lab.label}  tokens: {' '.join(lab.tokens)}", file=sys.stderr)
    print(_faithfulness_table(lab.comprehensiveness, lab.sufficiency, lab.titles), file=sys.stderr)
    return lab.to_dict()


def _faithfulness(args: argparse.Namespace) -> dict:
    from tqdm import tqdm

    from attention_core.faithfulness import Progress, run_report

    run, follow = _lab_run(args)
    if args.csv is not None:
        from attention_core.data import load_dataset

        dataset = load_dataset(args.csv, text_col=args.text_col, label_col=args.label_col)
        texts: tuple[str, ...] = dataset.texts
        labels: list = [dataset.label_names[y] for y in dataset.labels]
    else:
        if args.text_col or args.label_col:
            raise ConfigError("--text-col and --label-col go with a CSV", "name the CSV after the run, or leave them out")
        texts, labels = run.validation
        if not texts:
            raise RunError("this run kept no validation sentences", "give a labelled CSV after the run's name")
    bars: dict[str, tqdm] = {}

    def on_progress(p: Progress) -> None:
        follow()  # the thread count follows the machine (read at most every half second)
        if args.quiet:
            return
        if p.stage not in bars:
            for bar in bars.values():
                bar.close()
            what = "knock-out passes" if p.stage == "heads" else "sentences"
            bars[p.stage] = tqdm(total=p.total, unit=" " + what.split()[-1], desc=what, file=sys.stderr, dynamic_ncols=True)
        bars[p.stage].update(p.done - bars[p.stage].n)

    report = run_report(run.model, run.encoder, run.label_names, texts, labels, knock_out_mode=args.knock_out_mode,
                        seed=args.seed, on_progress=on_progress)
    for bar in bars.values():
        bar.close()
    print(f"{report.n} sentences, accuracy {report.accuracy:.3f}{_majority_said(run, texts, labels)}", file=sys.stderr)
    print(_faithfulness_table(report.comprehensiveness, report.sufficiency, report.titles), file=sys.stderr)
    return report.to_dict()


def _majority_said(run: Run, texts: Sequence[str], labels: Sequence) -> str:
    """", always answering “negative” would score 0.500": the accuracy's yardstick, over the sentences scored
    (those with a word the run knows); labels are names or ids of ``run.label_names``."""
    names = [run.label_names[y] if isinstance(y, int) else str(y) for y, text in zip(labels, texts, strict=True)
             if run.encoder.encode(text).readable]
    if not names:
        return ""
    label, count = Counter(names).most_common(1)[0]
    return f", always answering “{label}” would score {count / len(names):.3f}"


def _faithfulness_table(comprehensiveness: dict[str, float], sufficiency: dict[str, float], titles: dict[str, str]) -> str:
    """Per method: ERASER's comprehensiveness (higher = the model relies on those words) and sufficiency (lower = better)."""
    lines = [f"{'method':<26} comprehensiveness  sufficiency"]
    for name, value in comprehensiveness.items():
        lines.append(f"{titles.get(name, name):<26} {value:>17.3f}  {sufficiency[name]:>11.3f}")
    return "\n".join(lines)


def prediction_summary(prediction: Prediction, knocked_out: Sequence[int] = (), map_name: str = "Last layer") -> str:
    """A prediction for a person to read: label and probabilities, the tokens read (unknown words
    marked), and the word each head of the last attention map attends to most (averaged over the
    queries); ``map_name`` names that map (``ModelConfig.map_names``: a layer, or the pooling
    attention), ``knocked_out`` its heads (0-based) that were switched off."""
    probs = sorted(prediction.probabilities.items(), key=lambda kv: -kv[1])
    lines = [f"{prediction.label}  ({', '.join(f'{name} {p:.1%}' for name, p in probs)})"]
    lines.append(f"tokens: {' '.join(prediction.tokens)}")
    if prediction.unknown_tokens:
        how = "read as <unk>" if "<unk>" in prediction.tokens else "dropped"
        lines.append(f"unknown words, {how}: {', '.join(prediction.unknown_tokens)}")
    last = prediction.attention[-1]  # (H, T, T) of the last map
    lines.append(f"{map_name}, the word each head attends to most:")
    for h, head in enumerate(last):
        if h in knocked_out:
            lines.append(f"  head {h + 1}: knocked out")
            continue
        received = [sum(row[k] for row in head) / len(head) for k in range(len(prediction.tokens))]  # (T,) mean over queries
        k = max(range(len(received)), key=received.__getitem__)
        lines.append(f"  head {h + 1}: {prediction.tokens[k]} ({received[k]:.0%} of the attention)")
    return "\n".join(lines)


def _evaluate(args: argparse.Namespace) -> dict:
    from attention_core.data import load_dataset
    from attention_core.metrics import learning_verdict, verdict_fields
    from attention_core.runs import load_run
    from attention_core.training import evaluate_model

    run = load_run(_run_dir(args), embedding_file=args.embeddings)
    dataset = load_dataset(args.csv, text_col=args.text_col, label_col=args.label_col)
    m = evaluate_model(run.model, run.encoder, dataset, run.label_names)
    left_out = len(dataset) - m.n
    if left_out:
        unreadable = [text for text in dataset.texts if not run.encoder.encode(text).readable]
        examples = "; ".join(repr(text[:60]) for text in unreadable[:3])
        print(f"scored {m.n:,} of {len(dataset):,} rows: {left_out:,} left out, with no word the run knows "
              f"(its vocabulary and word vectors), e.g. {examples}", file=sys.stderr)
    verdict = learning_verdict(m.confusion, m.labels, row="row")
    if verdict is not None:
        print(verdict.message, file=sys.stderr)
    return {"accuracy": m.accuracy, "macro_f1": m.macro_f1, "n": m.n, "left_out": left_out, "confusion": m.confusion,
            "labels": m.labels, **verdict_fields(verdict)}


def _glue_workspace(argv: list[str]) -> list[str]:
    """``--workspace TOKEN`` as ``--workspace=TOKEN``: a token may begin with "-" (1 in 64 do), which
    argparse would take for an option."""
    out, args = [], iter(argv)
    for arg in args:
        value = next(args, None) if arg == "--workspace" else None
        out.append(arg if value is None else f"{arg}={value}")
    return out


def main(argv: list[str] | None = None, *,
         extend: Callable[[argparse.ArgumentParser, dict[str, Callable[[argparse.Namespace], dict]]], None] | None = None
         ) -> int:
    """Run the command line. ``extend(parser, commands)``: what a program built on this one adds before the arguments
    are read (``runner.cli``: the ``worker`` command, ``train --broker``); ``parser.commands`` is its subcommands'
    action (``.choices["train"]``: the train command's parser), ``commands`` maps a command's name to its function."""
    parser = _parser()
    commands = {"train": train_command, "predict": _predict, "evaluate": _evaluate, "explain": _explain,
                "faithfulness": _faithfulness}
    if extend is not None:
        extend(parser, commands)
    args = parser.parse_args(_glue_workspace(sys.argv[1:] if argv is None else argv))
    try:
        result = commands[args.command](args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, MemoryError) as err:
        print(f"error: {type(err).__name__}: {err} — check the paths and free disk space/memory", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(result))
    return 0
