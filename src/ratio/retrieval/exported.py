"""Sentence-transformers models exported to ONNX, run by onnxruntime (fp32 or int8) or OpenVINO.

Why not sentence-transformers' own ``backend="onnx"``: it loads through Optimum, whose only
ONNX release here (optimum-onnx 0.1.0) requires transformers<4.58 while the project runs
transformers 5, and optimum-intel (``backend="openvino"``) would pull torchvision and another
huggingface_hub. So the whole model is exported as one graph with ``torch.onnx`` and run
directly; the loaded SentenceTransformer still tokenizes, so token ids, truncation and padding
are those of the torch path.

Exports live under :func:`exports_root`, one folder per model content key and variant (never
inside the model folder: that would change the model's cache key, and fine-tuned model
folders may be symlinks), each built in a temporary folder and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ratio.core.io import RatioError
from ratio.retrieval.cpu import cpu_info, int8_reduce_range
from ratio.retrieval.models import REPO_ROOT

ONNX_FILE = "model.onnx"
OPSET = 17

# Dynamic int8 quantization (onnxruntime quantize_dynamic): MatMul weights int8 per output
# channel, activations uint8 per tensor at run time. BERT-style encoders have a few hidden
# channels 10-20x larger than the rest (all-MiniLM-L6-v2: one LayerNorm-output channel near
# 30 where the median channel peaks near 1.7), so one per-tensor activation scale leaves the
# other channels a handful of levels. Before quantizing, each weight MatMul's input is
# therefore divided per channel by s = max|x|^alpha / max|w|^(1 - alpha) and the weight rows
# multiplied by s (SmoothQuant, Xiao et al. 2023; the fp32 graph computes the same function),
# with max|x| measured on CALIBRATION. The FFN down-projections (more inputs than outputs;
# their input is the wide, heavy-tailed GELU output) stay fp32: the largest error left,
# for about a third of the MatMul work. Each text is encoded alone (batch_size 1): a batch
# shares one activation scale, so a vector would depend on the texts encoded with it
# (and on their padding), and cached vectors must not. Measured on all-MiniLM-L6-v2
# (docs/benchmarks.md, "CPU encoding backends").
INT8_RECIPE: dict[str, Any] = {
    "op_types_to_quantize": ["MatMul"],
    "per_channel": True,
    # 7-bit weights on x86 without VNNI, where 8-bit products saturate (ratio.retrieval.cpu);
    # part of the recipe, so of the cache key: each CPU kind gets its own int8 vectors
    "reduce_range": int8_reduce_range(cpu_info()[1]),
    "weight_type": "QInt8",
    "smooth_alpha": 0.7,
    "fp32_down_projections": True,
    "batch_size": 1,
}

# Sentences of the kinds the pools hold (claims, methods, numbers, symbols, stubs), written
# for calibration: only per-channel activation magnitudes are taken from them.
CALIBRATION = (
    "Large language models often produce fluent text that is not supported by any source.",
    "To address this, we retrieve passages from a corpus and condition generation on them.",
    "More generally, the problem is one of grounding a generator in external evidence.",
    "For example, a question about a drug interaction is answered from the package insert.",
    "Graph neural networks struggle to propagate information between distant nodes.",
    "We add virtual nodes that connect all vertices, which shortens every path to two hops.",
    "Our theorem holds for any convex loss with L-Lipschitz gradients (Appendix B).",
    "In particular, when the step size is 1/L the iterates converge at rate O(1/T).",
    "Table 3 reports accuracy, F1 and ECE on five benchmarks, averaged over 3 seeds.",
    "The model has 7B parameters and was trained on 2T tokens with a batch size of 4M.",
    "We thank the anonymous reviewers for their helpful comments.",
    "Diffusion models generate images by iteratively denoising samples of Gaussian noise.",
    "Specifically, classifier-free guidance mixes conditional and unconditional scores.",
    "However, sampling requires hundreds of network evaluations, which is slow.",
    "Reinforcement learning agents need millions of environment steps to learn a policy.",
    "A learned world model lets the agent plan in imagination instead.",
    "Let x ∈ R^d be an input and f_θ(x) the network's output.",
    "Privacy: differential privacy bounds what an adversary learns about one record.",
    "Federated learning keeps data on devices and only shares model updates.",
    "Why does pre-training help?",
    "See Figure 2.",
    "Proteins fold into structures that determine their function in the cell.",
    "Speech recognition degrades on accented speech and in noisy rooms; we study both.",
    "Code is available at https://github.com/example/project under the MIT license.",
)


def exports_root() -> Path:
    """Where exported models are kept: ``$RATIO_EXPORTS``, else ``models/.exports``."""
    return Path(os.environ.get("RATIO_EXPORTS") or REPO_ROOT / "models" / ".exports")


def recipe_tag(recipe: dict[str, Any]) -> str:
    """A short hash of a quantization recipe and the calibration sentences: change either and
    it is a new export and a new embedding-cache key."""
    data = json.dumps([recipe, CALIBRATION], sort_keys=True)
    return hashlib.sha1(data.encode()).hexdigest()[:8]


def _built_once(final: Path, build: Callable[[Path], None]) -> Path:
    """``final`` as a complete folder: reuse it, or build it in a temporary sibling and rename
    (two processes exporting at once both build; the first rename wins)."""
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir()
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _tensor_features(st: Any, texts: list[str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The model's tokenized inputs for ``texts``: tensors as int64 arrays, and the rest."""
    import torch

    # sentence-transformers 6 renamed tokenize to preprocess
    feats = st.preprocess(texts) if hasattr(st, "preprocess") else st.tokenize(texts)
    arrays = {k: v.numpy() for k, v in feats.items() if isinstance(v, torch.Tensor)}
    return arrays, {k: v for k, v in feats.items() if k not in arrays}


# what the Rust tokenizer's Encoding calls each input the graphs take
_ENCODING_FIELDS = {
    "input_ids": "ids",
    "attention_mask": "attention_mask",
    "token_type_ids": "type_ids",
}
_TOKENIZER_PROBE = (
    *CALIBRATION[:4],
    "Why?",
    " ".join(["Truncated at the model's maximum sequence length, this sentence repeats."] * 40),
)


class FastTokenizer:
    """The model's own Rust tokenizer called directly, with the truncation and padding that
    sentence-transformers' preprocessing asks of it: ~0.2 ms a query instead of ~1.5 ms through
    the transformers wrapper and torch tensors, a tenth of a served query's CPU. Built only
    where it reproduces that path's arrays exactly (:func:`fast_tokenizer`)."""

    def __init__(self, tokenizer: Any, names: list[str]) -> None:
        self.tokenizer, self.names = tokenizer, names

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        return {
            name: np.array([getattr(e, _ENCODING_FIELDS[name]) for e in encodings], dtype=np.int64)
            for name in self.names
        }


def fast_tokenizer(st: Any) -> FastTokenizer | None:
    """A :class:`FastTokenizer` for ``st``, or None where the model's preprocessing is more than
    one tokenizer call (another input, a prompt, a slow tokenizer) or the arrays differ from
    sentence-transformers' on a probe of short, long (truncated) and batched texts."""
    from tokenizers import Tokenizer  # lazy: like torch, only once a model loads

    tok = getattr(st, "tokenizer", None)
    backend = getattr(tok, "backend_tokenizer", None)
    max_length = getattr(st, "max_seq_length", None)
    if (
        tok is None
        or backend is None
        or not isinstance(max_length, int)
        or tok.pad_token_id is None
    ):
        return None
    own = Tokenizer.from_str(backend.to_str())  # a copy: the wrapper re-sets its own per call
    own.enable_truncation(max_length, direction=getattr(tok, "truncation_side", "right"))
    own.enable_padding(
        direction=getattr(tok, "padding_side", "right"),
        pad_id=tok.pad_token_id,
        pad_type_id=getattr(tok, "pad_token_type_id", 0),
        pad_token=tok.pad_token,
    )
    want, _ = _tensor_features(st, list(_TOKENIZER_PROBE[:1]))
    if not set(want) <= set(_ENCODING_FIELDS):
        return None
    fast = FastTokenizer(own, list(want))
    for batch in [[t] for t in _TOKENIZER_PROBE] + [list(_TOKENIZER_PROBE)]:
        want, _ = _tensor_features(st, batch)
        got = fast(batch)
        if set(got) != set(want) or not all(np.array_equal(got[k], want[k]) for k in want):
            return None
    return fast


def export_onnx(st: Any, out_dir: Path, name: str = "the model") -> None:
    """Write the SentenceTransformer ``st`` (on CPU, fp32) as one ONNX graph to ``out_dir``.
    Tracing records one path through the code, so the tracing batch is padded (the
    attention-mask path is recorded, not a shortcut for unpadded batches), and the graph is
    checked against the torch forward pass on a batch of another shape."""
    import torch

    probe = [
        "Sparse mixture-of-experts layers activate only a few experts for each input token.",
        "We prove a lower bound.",
    ]
    check = [
        "Protein structure prediction has improved dramatically with deep learning models.",
        "Differential privacy bounds what an attacker can learn about any single individual "
        "in the training data, at a cost in accuracy.",
        "Why?",
    ]
    arrays, fixed = _tensor_features(st, probe)
    names = list(arrays)
    if any(a.ndim != 2 for a in arrays.values()):
        raise RatioError(f"cannot export {type(st[0]).__name__}: inputs are not (batch, tokens)")

    class Graph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.st = st

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            features = {**fixed, **dict(zip(names, tensors, strict=True))}
            return self.st(features)["sentence_embedding"]

    graph = Graph().eval()
    inputs = tuple(torch.from_numpy(arrays[n]) for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    check_arrays, _ = _tensor_features(st, check)
    # the tracer warns about every Python-level branch it freezes; the check below is what
    # tells whether the frozen graph is right
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = graph(*(torch.from_numpy(check_arrays[n]) for n in names)).numpy()
        torch.onnx.export(
            graph,
            inputs,
            str(out_dir / ONNX_FILE),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    got = OrtSession(out_dir / ONNX_FILE, threads=1).run(check_arrays)
    if got.shape != want.shape or not np.allclose(got, want, atol=1e-4):
        diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("nan")
        raise RatioError(
            f"the ONNX export of {name} differs from its torch forward pass (max |diff| {diff:g}); use backend 'torch'"
        )


def _weight_matmuls(model: Any) -> dict[str, list[Any]]:
    """MatMul nodes with a constant 2-D weight, grouped by their (shared) activation input."""
    weights = {i.name: i for i in model.graph.initializer if len(i.dims) == 2}
    groups: dict[str, list[Any]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            groups.setdefault(node.input[0], []).append(node)
    return groups


def _activation_peaks(fp32_file: Path, st: Any, names: list[str], work: Path) -> dict:
    """Per-channel max |activation| of the tensors ``names``, over CALIBRATION's real tokens."""
    import onnx

    probe = onnx.load(str(fp32_file))
    for name in names:
        probe.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    onnx.save(probe, str(work / "probe.onnx"))
    session = OrtSession(work / "probe.onnx", threads=1)
    peaks: dict[str, np.ndarray] = {}
    for start in range(0, len(CALIBRATION), 8):
        arrays, _ = _tensor_features(st, list(CALIBRATION[start : start + 8]))
        outs = session.session.run(names, {n: arrays[n] for n in session.inputs})
        real = arrays["attention_mask"].astype(bool).ravel() if "attention_mask" in arrays else None
        for name, a in zip(names, outs, strict=True):
            a = np.abs(a.reshape(-1, a.shape[-1]))
            peak = (a[real] if real is not None and len(a) == len(real) else a).max(axis=0)
            peaks[name] = np.maximum(peaks.get(name, 0), peak)
    (work / "probe.onnx").unlink()
    return peaks


def smooth(fp32_file: Path, out_file: Path, st: Any, alpha: float) -> None:
    """Move activation outliers into the weights (SmoothQuant): same function, flatter inputs.
    Each group of weight MatMuls sharing an input x (Q, K, V) gets a Mul by 1/s on x and its
    weights' input rows multiplied by s."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(fp32_file))
    groups = _weight_matmuls(model)
    peaks = _activation_peaks(fp32_file, st, list(groups), out_file.parent)
    weights = {i.name: i for i in model.graph.initializer}
    nodes = list(model.graph.node)
    position = {id(n): i for i, n in enumerate(nodes)}
    muls: dict[int, Any] = {}  # node position -> the Mul to run just before it
    for x, users in groups.items():
        ws = [numpy_helper.to_array(weights[n.input[1]]) for n in users]
        if peaks[x].shape != (ws[0].shape[0],):
            continue  # not a per-channel input of these weights
        w_peak = np.max([np.abs(w).max(axis=1) for w in ws], axis=0)
        scale = np.maximum(peaks[x], 1e-5) ** alpha / np.maximum(w_peak, 1e-5) ** (1 - alpha)
        scale = np.clip(scale, 1e-3, 1e3).astype(np.float32)
        for node, w in zip(users, ws, strict=True):
            weights[node.input[1]].CopyFrom(
                numpy_helper.from_array((w * scale[:, None]).astype(np.float32), node.input[1])
            )
        inv, smoothed = f"{x}/smooth_inv", f"{x}/smoothed"
        model.graph.initializer.append(numpy_helper.from_array(1 / scale, inv))
        # before the first user: x exists there, so the node order stays topological
        first = min(position[id(n)] for n in users)
        muls[first] = onnx.helper.make_node("Mul", [x, inv], [smoothed], name=f"{x}/smooth")
        for node in users:
            node.input[0] = smoothed
    ordered = []
    for i, node in enumerate(nodes):
        ordered += [muls[i], node] if i in muls else [node]
    ordered = [onnx.NodeProto.FromString(n.SerializeToString()) for n in ordered]
    model.graph.ClearField("node")
    model.graph.node.extend(ordered)
    onnx.save(model, str(out_file))


def quantize_int8(fp32_dir: Path, out_dir: Path, st: Any, recipe: dict[str, Any]) -> None:
    """Smooth, then dynamically quantize an exported fp32 graph (see INT8_RECIPE)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    smoothed = out_dir / "smoothed.onnx"
    smooth(fp32_dir / ONNX_FILE, smoothed, st, recipe["smooth_alpha"])
    exclude = []
    if recipe["fp32_down_projections"]:
        model = onnx.load(str(smoothed))
        shapes = {i.name: tuple(i.dims) for i in model.graph.initializer}
        exclude = [
            n.name
            for users in _weight_matmuls(model).values()
            for n in users
            if shapes[n.input[1]][0] > shapes[n.input[1]][1]
        ]
    # onnxruntime advises "pre-processing before quantization" through the root logger on
    # every call; the recipe was measured without it (docs/benchmarks.md), so it is noise
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            smoothed,
            out_dir / ONNX_FILE,
            weight_type=QuantType[recipe["weight_type"]],
            op_types_to_quantize=recipe["op_types_to_quantize"],
            nodes_to_exclude=exclude,
            per_channel=recipe["per_channel"],
            reduce_range=recipe["reduce_range"],
        )
    finally:
        logging.disable(before)
    smoothed.unlink()


def ensure_export(st: Any, key: str, variant: str) -> Path:
    """The ONNX file for ``variant`` (``fp32`` or ``int8``) of the model with cache ``key``."""
    root = exports_root()
    fp32 = _built_once(root / key / "fp32", lambda d: export_onnx(st, d, key))
    if variant == "fp32":
        return fp32 / ONNX_FILE
    d = root / key / f"int8-{recipe_tag(INT8_RECIPE)}"
    return _built_once(d, lambda out: quantize_int8(fp32, out, st, INT8_RECIPE)) / ONNX_FILE


class OrtSession:
    """An onnxruntime CPU session over one exported graph."""

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # idle workers sleep instead of spinning: with requests in parallel on a few cores,
        # spinning threads take the cores the other requests need (measured: 3x the CPU)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # the first provider is not always the CPU one (AzureExecutionProvider comes first)
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]

    def run(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, {n: arrays[n] for n in self.inputs})[0]


class OpenVinoSession:
    """An OpenVINO CPU compiled model over one exported graph, kept at fp32 precision (else
    bf16 on CPUs with AVX512-BF16 or AMX: no longer the fp32 model, yet sharing its cache)."""

    def __init__(self, path: Path, threads: int) -> None:
        import openvino as ov

        core = ov.Core()
        hints = {
            "INFERENCE_PRECISION_HINT": "f32",
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
        }
        self.compiled = core.compile_model(core.read_model(str(path)), "CPU", hints)
        self.request = self.compiled.create_infer_request()
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]

    def run(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(self.request.infer({n: arrays[n] for n in self.inputs})[0])


class ExportedEncoder:
    """Encodes like ``SentenceTransformer.encode`` with the forward pass run by an exported graph.
    A single text (a user's query) runs on its own one-thread session: a server answers many
    queries at once, each on one core, and a team of threads per query only queues them (on 2
    cores, 8 clients: ~3x the CPU per query)."""

    def __init__(
        self, st: Any, session: Callable[[int], OrtSession | OpenVinoSession], threads: int
    ) -> None:
        self.st = st
        self._open = session  # threads -> a session over the graph
        self.threads = threads  # for batches
        # a Rust tokenizer shared by threads can fail ("Already borrowed") when calls
        # overlap; tokenizing is ~0.3 ms of a query's ~10, so only it runs one at a time
        self._tokenizer_lock = threading.Lock()
        self._fast = fast_tokenizer(st)
        self._sessions_lock = threading.Lock()
        self._sessions: dict[int, OrtSession | OpenVinoSession] = {}

    def session(self, threads: int) -> OrtSession | OpenVinoSession:
        with self._sessions_lock:
            if threads not in self._sessions:
                self._sessions[threads] = self._open(threads)
            return self._sessions[threads]

    @property
    def dim(self) -> int:
        # sentence-transformers 6 renamed get_sentence_embedding_dimension
        get = getattr(self.st, "get_embedding_dimension", None)
        return int(get() if get else self.st.get_sentence_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        session = self.session(1 if len(texts) == 1 else self.threads)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            batch = [texts[i] for i in idx]
            with self._tokenizer_lock:
                arrays = self._fast(batch) if self._fast else _tensor_features(self.st, batch)[0]
            out[idx] = session.run(arrays)
        return out
