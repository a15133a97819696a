"""Fine-tune the packaged static token vectors for tool search, contrastively on ../shared/train (dev-only).

The forward pass is the run-time encoding, exactly: a text is tokenised by `StaticEmbedder.tokenize`
(no special tokens, unknown tokens dropped, at most 512 tokens), its token vectors are averaged and
the mean L2-normalised; a tool's vector is normalize(enc(tool_text) + enc(summary_text)) as
`DenseBackend` builds it, and a query is embedded as `with_implied_words(query)`.

Loss: InfoNCE with a learned temperature over in-batch negatives (masked where gold for this query
too) and hard negatives mined per query from its own group's catalog (dense and BM25 top tools,
gold excluded, mined again each epoch), plus an L2 anchor to the starting vectors; APIBench (noisy
labels) counts less. The epoch kept has the best validation MRR (queries of every group but
APIBench against their group's whole catalog, by `DenseBackend` on the float16-rounded vectors);
../shared/eval is never read. The shipped vectors are then moved only part of the way from the
start (`--interpolate`, as WiSE-FT): the training queries are mostly long API-call requests, and
the full step cost short everyday queries (MetaTool dev) what the start knew of them.

Needs torch (CPU; never a run-time dependency). From the previous release's model directory
(embeddings sha256 b8fef3b8..., copied to BASE), the shipped model was made with

    PYTHONPATH=src:. nice -n 5 /work/train-venv/bin/python scripts/train_embeddings.py \\
        --train-dir ../shared/train --base BASE --interpolate 0.5 --out src/toolscout/search/model

and the ranker's cross-fitting fold models with the same and `--groups seal_tools,stabletoolbench,tooltalk`
or `--groups bfcl,gorilla_apibench,nestful,api_bank`. `--validate-groups` picks the epoch on other
groups' validation queries (how settings carry over to sources not trained on). 1 to 3 minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shlex
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT / "src"), str(REPO_ROOT)]

import torch  # noqa: E402
from benchmarks import train_data  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from toolscout.catalog import CatalogTool  # noqa: E402
from toolscout.search.bm25 import BM25Backend  # noqa: E402
from toolscout.search.embedding import (  # noqa: E402
    DEFAULT_MAX_LENGTH,
    DEFAULT_MODEL_DIR,
    DenseBackend,
    StaticEmbedder,
    summary_text,
    tool_text,
)
from toolscout.search.text import with_implied_words  # noqa: E402

Array = npt.NDArray[np.float32]
# The options recorded in config.json as the training's settings (two under clearer names).
KNOB_NAMES = "epochs patience lr batch temperature learn_temperature hard hard_depth bm25 anchor apibench_weight seed"
KNOBS = frozenset([*KNOB_NAMES.split(), "interpolate"])
SETTINGS = {"hard": "hard_negatives", "bm25": "bm25_negatives"}
Key = tuple[str, str]


def key(tool: CatalogTool) -> Key:
    return (tool.server, tool.name)


class Texts:
    """Token ids of many texts as one flat tensor, for `EmbeddingBag` means over any subset."""

    def __init__(self, rows: Sequence[Sequence[int]]) -> None:
        self.flat = torch.tensor([t for row in rows for t in row], dtype=torch.long)
        self.lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
        self.starts = torch.cat([torch.zeros(1, dtype=torch.long), self.lengths.cumsum(0)[:-1]])

    def encode(self, bag: torch.nn.EmbeddingBag, index: torch.Tensor) -> torch.Tensor:
        """Normalised means of the texts at `index` (a text with no token gives a zero row)."""
        starts, counts = self.starts[index].tolist(), self.lengths[index].tolist()
        parts = [self.flat[a : a + n] for a, n in zip(starts, counts, strict=True)]
        tokens = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), self.lengths[index].cumsum(0)[:-1]])
        return torch.nn.functional.normalize(bag(tokens, offsets), dim=1, eps=1e-32)


@dataclass(frozen=True)
class Scorer:
    """Cosines of queries with a catalog's tools for given vectors, computed by the run-time code itself."""

    tokenizer: Tokenizer
    max_length: int

    def __call__(self, vectors: Array, catalog: list[CatalogTool], queries: list[str]) -> Array:
        embedder = StaticEmbedder(self.tokenizer, vectors, normalize=True, max_length=self.max_length, model_id="t")
        backend = DenseBackend(embedder)
        backend.rebuild(catalog)
        return backend.scores_many(queries)


def rank_metrics(scores: Array, catalog: list[CatalogTool], gold: list[set[Key]]) -> tuple[float, float]:
    """R@1 and MRR (rank of the first gold tool) over the rows of `scores`."""
    keys = [key(t) for t in catalog]
    r1, rr = 0.0, 0.0
    for row, wanted in zip(scores, gold, strict=True):
        order = np.argsort(-row, kind="stable")
        for rank, index in enumerate(order, start=1):
            if keys[index] in wanted:
                r1 += rank == 1
                rr += 1.0 / rank
                break
    return r1 / len(gold), rr / len(gold)


def evaluate_split(
    score: Scorer, vectors: Array, pairs: list[train_data.Pair], catalogs: dict[str, list[CatalogTool]]
) -> dict[str, dict[str, float]]:
    """Per group: R@1, MRR and query count of `pairs` (dense only) against the group's whole catalog."""
    rounded = vectors.astype(np.float16)  # what ships
    out: dict[str, dict[str, float]] = {}
    for group in sorted({p.group for p in pairs}):
        own = [p for p in pairs if p.group == group]
        text: dict[str, str] = {}
        gold: dict[str, set[Key]] = defaultdict(set)
        for p in own:
            text[p.qid] = p.query
            gold[p.qid].add(key(p.tool))
        qids = sorted(text)
        scores = score(rounded, catalogs[group], [text[q] for q in qids])
        r1, mrr = rank_metrics(scores, catalogs[group], [gold[q] for q in qids])
        out[group] = {"r1": round(r1, 4), "mrr": round(mrr, 4), "queries": len(qids)}
    return out


def selection_score(figures: dict[str, dict[str, float]]) -> float:
    """Validation MRR over all queries (APIBench's noisy labels left out when others are there).

    Per query, not per group: a mean over groups would let 19 API-Bank queries swing the choice.
    """
    groups = [g for g in figures if g != "gorilla_apibench"] or list(figures)
    counts = [figures[g]["queries"] for g in groups]
    return float(np.average([figures[g]["mrr"] for g in groups], weights=counts))


def mine(
    score: Scorer,
    vectors: Array,
    catalogs: dict[str, list[CatalogTool]],
    lexical: dict[str, BM25Backend],
    queries: list[tuple[str, str, set[Key]]],
    depth: int,
    use_bm25: bool,
) -> list[list[int]]:
    """Per query (qid, group, gold keys): catalog indices of its group's top non-gold tools by dense (and BM25)."""
    out: list[list[int]] = [[] for _ in queries]
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, (_, group, _) in enumerate(queries):
        by_group[group].append(i)
    for group, members in by_group.items():
        keys = [key(t) for t in catalogs[group]]
        texts = [texts_of_query[queries[i][0]] for i in members]
        scores = score(vectors, catalogs[group], texts)
        for row, i in zip(scores, members, strict=True):
            gold = queries[i][2]
            picked = [j for j in np.argsort(-row, kind="stable")[: depth + len(gold)] if keys[j] not in gold][:depth]
            if use_bm25:
                bm25 = lexical[group].scores(texts_of_query[queries[i][0]])
                more = [j for j in np.argsort(-bm25, kind="stable")[: depth + len(gold)] if keys[j] not in gold]
                picked += [j for j in more[:depth] if j not in picked]
            out[i] = [int(j) for j in picked]
    return out


texts_of_query: dict[str, str] = {}


def train(args: argparse.Namespace) -> None:
    started = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # deterministic sums, and the 2 shared cores

    config: dict[str, Any] = json.loads((args.base / "config.json").read_text(encoding="utf-8"))
    max_length = int(config.get("max_length", DEFAULT_MAX_LENGTH))
    base = StaticEmbedder.load(args.base)
    tokenizer = Tokenizer.from_file(str(args.base / "tokenizer.json"))
    start = base.vectors  # float16 → float32
    scorer = Scorer(tokenizer, max_length)

    wanted = [g for g in (args.groups.split(",") if args.groups else train_data.GROUPS) if g != train_data.HELD_OUT]
    excluded = set(args.exclude_groups.split(",")) if args.exclude_groups else set()
    wanted = [g for g in wanted if g not in excluded]
    unknown = set(wanted) - set(train_data.GROUPS)
    if unknown:
        raise SystemExit(f"unknown groups: {sorted(unknown)}")
    # The validation queries that pick the epoch: the training groups' by default; other groups'
    # (`--validate-groups`) to choose settings by how they carry over to sources not trained on.
    checked = [g for g in args.validate_groups.split(",") if g] if args.validate_groups else wanted
    every = sorted({*wanted, *checked, train_data.HELD_OUT})
    pairs = train_data.load_pairs(args.train_dir, every)
    train_pairs, validation, held = train_data.split(pairs)
    train_pairs = [p for p in train_pairs if p.group in wanted]
    validation = [p for p in validation if p.group in checked]
    catalogs = {g: train_data.catalog_and_queries([p for p in pairs if p.group == g])[0] for g in every}
    lexical = {g: BM25Backend() for g in wanted}
    for g in wanted:
        lexical[g].rebuild(catalogs[g])

    # Training queries: one per qid, with its gold tools (catalog indices of its group).
    gold_keys: dict[str, set[Key]] = defaultdict(set)
    query_group: dict[str, str] = {}
    for p in train_pairs:
        texts_of_query[p.qid] = p.query
        gold_keys[p.qid].add(key(p.tool))
        query_group[p.qid] = p.group
    qids = sorted(gold_keys)
    queries = [(q, query_group[q], gold_keys[q]) for q in qids]
    index_of = {g: {key(t): i for i, t in enumerate(catalogs[g])} for g in wanted}
    # Every catalog tool of every group as one id space: (group, index) → row.
    tool_rows: dict[tuple[str, int], int] = {}
    all_tools: list[CatalogTool] = []
    for g in wanted:
        for i, tool in enumerate(catalogs[g]):
            tool_rows[(g, i)] = len(all_tools)
            all_tools.append(tool)
    positives = [[tool_rows[(g, index_of[g][k])] for k in sorted(gold)] for _, g, gold in queries]
    gold_rows = [set(p) for p in positives]
    weights = torch.tensor([args.apibench_weight if g == "gorilla_apibench" else 1.0 for _, g, _ in queries])

    query_texts = Texts(base.tokenize([with_implied_words(texts_of_query[q]) for q in qids]))
    full_texts = Texts(base.tokenize([tool_text(t) for t in all_tools]))
    summary_texts = Texts(base.tokenize([summary_text(t) for t in all_tools]))
    print(f"{len(qids)} training queries, {len(all_tools)} tools, groups {wanted}", file=sys.stderr)

    bag = torch.nn.EmbeddingBag(start.shape[0], start.shape[1], mode="mean")
    bag.weight.data = torch.tensor(start)
    anchor = torch.tensor(start)
    log_scale = torch.nn.Parameter(torch.tensor(float(np.log(1.0 / args.temperature))))
    params: list[torch.nn.Parameter] = [bag.weight]
    if args.learn_temperature:
        params.append(log_scale)
    optimizer = torch.optim.Adam(params, lr=args.lr)

    def tools_encode(rows: torch.Tensor) -> torch.Tensor:
        both = full_texts.encode(bag, rows) + summary_texts.encode(bag, rows)
        return torch.nn.functional.normalize(both, dim=1, eps=1e-12)

    history: list[dict[str, Any]] = []
    figures = evaluate_split(scorer, start, validation, catalogs)
    best_score, best_epoch, best = selection_score(figures), 0, start.copy()
    history.append({"epoch": 0, "validation_mrr": round(best_score, 4)})
    print(f"epoch 0: validation MRR {best_score:.4f} {figures}", file=sys.stderr)
    rng = random.Random(args.seed)
    for epoch in range(1, args.epochs + 1):
        current = bag.weight.detach().numpy().copy()
        hard = mine(scorer, current, catalogs, lexical, queries, args.hard_depth, args.bm25) if args.hard > 0 else []
        hard_rows = [[tool_rows[(g, j)] for j in hard[i]] for i, (_, g, _) in enumerate(queries)] if hard else []
        order = list(range(len(queries)))
        rng.shuffle(order)
        total = 0.0
        for begin in range(0, len(order), args.batch):
            batch = order[begin : begin + args.batch]
            candidates = [rng.choice(positives[i]) for i in batch]
            for i in batch:
                if hard_rows and hard_rows[i]:
                    candidates += rng.sample(hard_rows[i], min(args.hard, len(hard_rows[i])))
            mask = torch.tensor(
                [[c in gold_rows[i] and c != candidates[n] for c in candidates] for n, i in enumerate(batch)]
            )
            optimizer.zero_grad()
            q = query_texts.encode(bag, torch.tensor(batch))
            t = tools_encode(torch.tensor(candidates))
            logits = (q @ t.T) * log_scale.exp().clamp(max=100.0)
            logits = logits.masked_fill(mask, float("-inf"))
            losses = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)), reduction="none")
            w = weights[torch.tensor(batch)]
            drift = ((bag.weight - anchor) ** 2).sum(1).mean()  # per token; × vocabulary / 1000 below
            loss = (losses * w).sum() / w.sum() + args.anchor * drift * start.shape[0] / 1000
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(batch)
        current = bag.weight.detach().numpy().copy()
        figures = evaluate_split(scorer, current, validation, catalogs)
        score = selection_score(figures)
        history.append(
            {
                "epoch": epoch,
                "train_loss": round(total / len(order), 4),
                "temperature": round(float(1 / log_scale.detach().exp()), 4),
                "validation_mrr": round(score, 4),
            }
        )
        print(f"epoch {epoch}: loss {total / len(order):.4f} validation MRR {score:.4f} {figures}", file=sys.stderr)
        if score > best_score:
            best_score, best_epoch, best = score, epoch, current
        elif epoch - best_epoch >= args.patience:
            break

    # Only part of the way from the start (as WiSE-FT): what the start knew of short everyday
    # queries, which the training data has few of, is kept (how the share was chosen: the model card).
    best = (start + args.interpolate * (best - start)).astype(np.float32)
    final_validation = evaluate_split(scorer, best, validation, catalogs)
    start_validation = evaluate_split(scorer, start, validation, catalogs)
    held_start = evaluate_split(scorer, start, held, catalogs)
    held_final = evaluate_split(scorer, best, held, catalogs)
    print(f"validation before {start_validation}\nvalidation after {final_validation}", file=sys.stderr)
    print(f"held out before {held_start}\nheld out after {held_final}", file=sys.stderr)
    record: dict[str, Any] = {
        "method": "contrastive fine-tuning (InfoNCE, in-batch + mined hard negatives, L2 anchor to the start)",
        "start": {"embeddings_sha256": config.get("embeddings_sha256")},
        "groups": {g: train_data.LICENCES[g] for g in wanted},
        "validation_groups": checked,
        "held_out_group": train_data.HELD_OUT,
        "training_queries": len(qids),
        "settings": {SETTINGS.get(name, name): value for name, value in vars(args).items() if name in KNOBS},
        "best_epoch": best_epoch,
        "history": history,
        "validation_dense": {"before": start_validation, "after": final_validation},
        "held_out_dense": {"before": held_start, "after": held_final},
        "torch_version": torch.__version__,
        "seconds": round(time.time() - started),
        "command": "PYTHONPATH=src:. /work/train-venv/bin/python "
        + " ".join(shlex.quote(a) for a in ["scripts/train_embeddings.py", *sys.argv[1:]]),
    }
    if args.out is not None:
        write_model(args.base, args.out, best, config, record)


def write_model(base: Path, out: Path, vectors: Array, config: dict[str, Any], record: dict[str, Any]) -> None:
    """The packaged format, written aside and swapped in: a reader never sees half a model."""
    buffer = io.BytesIO()
    np.save(buffer, vectors.astype(np.float16))
    raw = buffer.getvalue()
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / "embeddings.npy").write_bytes(raw)
    for name in ("tokenizer.json", "LICENSE"):
        shutil.copyfile(base / name, tmp / name)
    config = {
        **config,
        "fine_tuning": record,
        "embeddings_sha256": hashlib.sha256(raw).hexdigest(),
        "tokenizer_sha256": hashlib.sha256((tmp / "tokenizer.json").read_bytes()).hexdigest(),
    }
    (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    # The packaged model's card is kept: it is written by hand, with the dev figures.
    readme = out / "README.md" if out == DEFAULT_MODEL_DIR.resolve() else None
    text = readme.read_text(encoding="utf-8") if readme is not None and readme.is_file() else card(record)
    (tmp / "README.md").write_text(text, encoding="utf-8")
    if out.exists():
        for extra in out.iterdir():  # files of others (the ranker's weights) stay
            if not (tmp / extra.name).exists():
                shutil.copy2(extra, tmp / extra.name)
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)
    print(f"wrote {out}", file=sys.stderr)


def card(record: dict[str, Any]) -> str:
    groups = ", ".join(f"{g} ({licence})" for g, licence in record["groups"].items())
    return (
        "# Static tool-search embedder, fine-tuned\n\n"
        "The packaged static embedder (all-MiniLM-L6-v2 distilled and refined, Apache-2.0) fine-tuned\n"
        f"contrastively by `scripts/train_embeddings.py` on the train split of ../shared/train: {groups}.\n"
        f"{record['held_out_group']} held out. Command:\n\n    {record['command']}\n\n"
        "`config.json` records the settings, the validation history and the figures. Licence: Apache-2.0 (LICENSE).\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument(
        "--groups", default="", help="Comma-separated groups to train on (default: all but the held out)."
    )
    parser.add_argument("--exclude-groups", default="", help="Comma-separated groups to leave out.")
    parser.add_argument("--validate-groups", default="", help="Groups whose validation queries pick the epoch.")
    parser.add_argument("--base", type=Path, default=DEFAULT_MODEL_DIR, help="The model to start from.")
    parser.add_argument("--out", type=Path, default=None, help="Write the model directory here.")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--learn-temperature", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--hard", type=int, default=3, help="Hard negatives per query and step (0: none).")
    parser.add_argument("--hard-depth", type=int, default=10, help="Mined from this many top tools.")
    parser.add_argument("--bm25", action=argparse.BooleanOptionalAction, default=True, help="Mine BM25's too.")
    parser.add_argument("--anchor", type=float, default=1.0, help="Weight of the L2 pull to the start.")
    parser.add_argument("--apibench-weight", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interpolate", type=float, default=1.0, help="Ship start + this × (trained - start).")
    train(parser.parse_args())


if __name__ == "__main__":
    main()
