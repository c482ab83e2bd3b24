"""Export of the bundled embedding model to ONNX (fp32) and its int8 quantisation, cached on disk.

The export runs once, at set-up (``python -m memory_store.model_export``, called by ``scripts/dev.sh setup``) or on
first use, from the PyTorch weights already on disk (never downloaded). Only the export needs torch and
transformers; loading a cached export needs neither.

Cache: ``$BRT_MODEL_CACHE``, else ``<venv>/share/brt/models`` when running in a virtualenv, else
``$BRT_HOME/models``. One folder per model and cache key; the key is a hash of every file of the model folder
(content hashes, remembered per path/size/mtime so a warm lookup only stats the files) and ``EXPORTER_VERSION``,
so changed weights, tokenizer or recipe give a new folder and a stale export is never used.

int8 recipe (``RECIPE_INT8``): ONNX Runtime's BERT graph fusions (attention, bias GELU; not skip layer norm, see
``INT8_GRAPH_LEVEL``), then
dynamic quantisation with per-channel symmetric int8 weights (activations uint8, per tensor, scaled per batch)
of every MatMul and the fused attention; embeddings and layer norms stay fp32. The FFN output projection's input
(the GELU output) has a few channels whose values reach 4-7x every other channel's (the same channels for any
text); one per-tensor activation scale cannot hold them, so those channels are split off before quantising:
the int8 MatMul sees the input with them zeroed, and a K-row fp32 MatMul adds their share back. They are found
by running the fused model on the probe texts (``_outlier_channels``). Quantising every weight naively moved
vectors to cosine 0.90-0.94 of fp32; keeping the FFN outputs fp32 gave 0.9968 at 1.4x ONNX fp32; this split
gives 0.996 at 1.7x (bench/embed_backends.py; docs/benchmarks.md). The residual adds and layer norms stay two
plain operators (Add, LayerNormalization), and the int8 graph runs with ONNX Runtime's basic graph optimisations only,
which would otherwise fuse them again: its fused SkipLayerNormalization took 17% of the int8 graph's time, the two
plain operators far less (30.4 -> 26.2 CPU-ms a chunk of about 214 tokens on the 2-core EPYC, mean cosine to fp32
unchanged at 0.9968).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import EmbeddingModelError
from .settings import settings

log = logging.getLogger(__name__)

EXPORTER_VERSION = "3"
OPSET = 17
FP32_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
MANIFEST = "manifest.json"
RECIPE_INT8 = "ort-fused (no skip layer norm)+dynamic-per-channel-int8, ffn-output outlier channels fp32"
#: ONNX Runtime graph optimisation level of the int8 graph's sessions (fp32 runs at ORT's default, every level).
INT8_GRAPH_LEVEL = "basic"
# An FFN-output input channel is an outlier when its largest |value| on the probe texts is this many times the
# layer's 16th largest; at most this many per layer (all-MiniLM-L6-v2: 1, 1, 2, 1, 0, 0 at ratios 4.5-6.9,
# the next channels at 1.4-2.2).
OUTLIER_RATIO = 3.0
MAX_OUTLIER_CHANNELS = 4
# Exported graphs must agree with the PyTorch model on these (cosine), else the export is refused.
FP32_MIN_COSINE = 0.9999
INT8_MIN_COSINE = 0.98
_PROBE_TEXTS = [
    "Largest Contentful Paint should occur within 2.5 seconds of when the page first starts loading.",
    "Reserve space for images and embeds with width and height attributes.",
    "A short one.",
    "Les modèles d'embeddings transforment un texte en vecteur; naïve café — ünïcödé ok. 東京 2025 🚀",
    " ".join(["Long text with many words to exercise truncation at the model's maximum input length."] * 40),
]
_GELU_OPS = {"Gelu", "BiasGelu", "FastGelu", "QuickGelu"}


@dataclass(frozen=True)
class ExportedModel:
    """A cached export: its folder and files (``int8`` is None while not quantised)."""

    folder: Path
    fp32: Path
    int8: Path | None
    manifest: dict[str, Any]


def cache_root() -> Path:
    """Where exports live: ``$BRT_MODEL_CACHE``, else beside the virtualenv, else ``$BRT_HOME/models``."""
    configured = settings()
    if configured.model_cache is not None:
        return configured.model_cache
    if sys.prefix != sys.base_prefix:
        venv_dir = Path(sys.prefix) / "share" / "brt" / "models"
        with contextlib.suppress(OSError):
            venv_dir.mkdir(parents=True, exist_ok=True)
        if os.access(venv_dir, os.W_OK):
            return venv_dir
    return configured.home / "models"


def _model_files(model_path: Path) -> list[Path]:
    return sorted(p for p in model_path.rglob("*") if p.is_file() and not p.name.startswith("."))


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hash_index_path(root: Path) -> Path:
    return root / "file-hashes.json"


def model_key(model_path: Path, root: Path | None = None) -> str:
    """Cache key of a model folder: sha256 over its files' relative paths and content hashes plus the exporter
    version. Content hashes are remembered per (path, size, mtime) in the cache, so a warm call only stats."""
    root = root or cache_root()
    index_file = _hash_index_path(root)
    try:
        index = json.loads(index_file.read_text())
    except (OSError, ValueError):
        index = {}
    changed = False
    h = hashlib.sha256(f"brt-onnx-export:{EXPORTER_VERSION}\n".encode())
    for path in _model_files(model_path):
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns]
        entry = index.get(str(path))
        if entry and entry[:2] == stamp:
            digest = entry[2]
        else:
            digest = _file_sha256(path)
            index[str(path)] = [*stamp, digest]
            changed = True
        h.update(f"{path.relative_to(model_path).as_posix()}\0{digest}\n".encode())
    if changed:
        with contextlib.suppress(OSError):
            root.mkdir(parents=True, exist_ok=True)
            tmp = index_file.with_name(f".{index_file.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(index, indent=1, sort_keys=True))
            os.replace(tmp, index_file)
    return h.hexdigest()


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name.rstrip("/").split("/")[-1]) or "model"


def export_folder(name: str, model_path: Path, root: Path | None = None) -> Path:
    """The cache folder of ``model_path``'s export (it may not exist yet)."""
    root = root or cache_root()
    return root / f"{_slug(name)}-{model_key(model_path, root)[:20]}"


def find_export(name: str, model_path: Path, *, need_int8: bool = False) -> ExportedModel | None:
    """The cached export of this exact model folder, or None (never exports)."""
    folder = export_folder(name, model_path)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    fp32 = folder / FP32_FILE
    int8 = folder / INT8_FILE
    if not fp32.is_file() or (need_int8 and not int8.is_file()):
        return None
    return ExportedModel(folder, fp32, int8 if int8.is_file() else None, manifest)


def verified_bytes(exported: ExportedModel, int8: bool) -> bytes:
    """The exported ONNX file (int8 or fp32), read once, its bytes checked against the sha256 its manifest
    recorded when it was written: a cached export changed since (or swapped for another graph) is refused, never
    loaded, and what is loaded is the bytes that were checked. EmbeddingModelError otherwise."""
    path = exported.int8 if int8 else exported.fp32
    entry = exported.manifest.get("int8" if int8 else "fp32")
    recorded = entry.get("sha256") if isinstance(entry, dict) else None
    if path is None or not recorded:
        raise EmbeddingModelError(f"the cached export in {exported.folder} records no sha256 for its "
                                  f"{'int8' if int8 else 'fp32'} model: remove the folder to export it again")
    return _checked(path, str(recorded), "cached ONNX export")


def verified_source(model_path: Path, name: str, root: Path | None = None) -> bytes:
    """A file of the model folder (``tokenizer.json``), read once, its bytes checked against the content hash the
    export cache's key was computed from (``model_key``: ``file-hashes.json``): a file changed behind an
    unchanged size and time is refused. EmbeddingModelError otherwise."""
    root = root or cache_root()
    path = model_path / name
    recorded = _recorded_digest(root, path)
    if recorded is None:
        model_key(model_path, root)  # records it now: the export's key comes from these same bytes
        recorded = _recorded_digest(root, path)
    if recorded is None:  # a cache brt cannot write: nothing recorded to check against
        log.info("no recorded hash for %s (the model cache is not writable): loaded unchecked", path)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise EmbeddingModelError(f"cannot read {path}: {exc.strerror or exc}") from None
    return _checked(path, recorded, "embedding model file")


def _recorded_digest(root: Path, path: Path) -> str | None:
    try:
        index = json.loads(_hash_index_path(root).read_text())
    except (OSError, ValueError):
        return None
    entry = index.get(str(path)) if isinstance(index, dict) else None
    return str(entry[2]) if isinstance(entry, list) and len(entry) == 3 else None


def _checked(path: Path, recorded: str, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingModelError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != recorded:
        raise EmbeddingModelError(f"{what} {path}: sha256 {digest[:12]}… does not match the recorded "
                                  f"{recorded[:12]}… (changed since it was recorded; not loaded)")
    return data


@contextlib.contextmanager
def _export_lock(folder: Path) -> Iterator[None]:
    folder.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder.parent / f".{folder.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process exporting the same model: wait for it
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def ensure_export(name: str, model_path: Path, *, int8: bool = True) -> ExportedModel:
    """The cached export of ``model_path`` (fp32, and int8 when asked), exporting what is missing."""
    found = find_export(name, model_path, need_int8=int8)
    if found is not None:
        return found
    folder = export_folder(name, model_path)
    with _export_lock(folder):
        found = find_export(name, model_path, need_int8=int8)  # exported by another process meanwhile
        if found is not None:
            return found
        folder.mkdir(parents=True, exist_ok=True)
        manifest_path = folder / MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            manifest = {
                "model": name,
                "source": str(model_path),
                "key": model_key(model_path),
                "exporter_version": EXPORTER_VERSION,
                "opset": OPSET,
            }
        try:
            if not (folder / FP32_FILE).is_file():
                log.warning("exporting embedding model %s to ONNX (once; cached in %s)", name, folder)
                manifest["fp32"] = _export_fp32(model_path, folder / FP32_FILE)
            if int8 and not (folder / INT8_FILE).is_file():
                log.warning("quantising embedding model %s to int8 (once; cached in %s)", name, folder)
                manifest["int8"] = _quantize_int8(model_path, folder / FP32_FILE, folder / INT8_FILE)
        except EmbeddingModelError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"cannot export embedding model {name!r} to ONNX: {exc}") from exc
        tmp = manifest_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        os.replace(tmp, manifest_path)
    found = find_export(name, model_path, need_int8=int8)
    if found is None:  # pragma: no cover - the files were just written
        raise EmbeddingModelError(f"export of {name!r} in {folder} is incomplete")
    return found


# --- export -----------------------------------------------------------------------------------------------
def _quiet_third_party() -> contextlib.ExitStack:
    """Silence the exporter's and quantiser's warnings and progress bars (they are not the user's business)."""
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    for name in ("root", "onnxruntime", "torch.onnx", "transformers"):
        logger = logging.getLogger(None if name == "root" else name)
        old = logger.level
        logger.setLevel(logging.ERROR)
        stack.callback(logger.setLevel, old)
    try:
        from transformers.utils import logging as hf_logging

        old_verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        stack.callback(hf_logging.set_verbosity, old_verbosity)
        stack.callback(hf_logging.enable_progress_bar)
    except Exception:  # noqa: BLE001 - only a verbosity setting
        pass
    return stack


def _torch_reference(model_path: Path, texts: list[str]) -> Any:
    """Last hidden states and masks of ``texts`` from the PyTorch model (the export's yardstick)."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    from .model_files import max_tokens_for_path

    tok = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModel.from_pretrained(str(model_path)).eval()
    enc = tok(texts, truncation=True, max_length=max_tokens_for_path(model_path), padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**enc, return_dict=True).last_hidden_state
    return enc, np.asarray(hidden.float().numpy())


def _export_fp32(model_path: Path, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModel

    started = time.perf_counter()
    with _quiet_third_party():
        # eager attention: a plain graph of MatMul/Softmax that ONNX Runtime fuses itself
        model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()

        class _Encoder(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=True
                ).last_hidden_state

        ids = torch.full((2, 16), 1000, dtype=torch.long)
        mask = torch.ones((2, 16), dtype=torch.long)
        mask[1, 9:] = 0  # a padded row, so the mask is traced as data, not folded away as all ones
        types = torch.zeros((2, 16), dtype=torch.long)
        axes = {0: "batch", 1: "tokens"}
        tmp = out.with_name(out.name + ".tmp")
        torch.onnx.export(
            _Encoder(model),
            (ids, mask, types),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
        cos = _accept(model_path, tmp, out, FP32_MIN_COSINE, "ONNX export disagrees with PyTorch")
    return {
        **_file_info(out),
        "min_cosine_to_torch": round(cos, 7),
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _file_info(path: Path) -> dict[str, Any]:
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": _file_sha256(path)}


def _accept(model_path: Path, tmp: Path, out: Path, min_cosine: float, problem: str) -> float:
    """Move ``tmp`` to ``out`` if it agrees with PyTorch on the probe texts (min cosine), else delete it."""
    cos = _check_against_torch(model_path, tmp)
    if cos < min_cosine:
        tmp.unlink(missing_ok=True)
        raise EmbeddingModelError(f"{problem} (min cosine {cos:.6f} < {min_cosine})")
    os.replace(tmp, out)
    return cos


def _pooled(hidden: Any, mask: Any) -> Any:
    import numpy as np

    m = np.asarray(mask, dtype=np.float32)[..., None]
    v = (hidden * m).sum(axis=1) / m.sum(axis=1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _check_against_torch(model_path: Path, onnx_file: Path) -> float:
    """Minimum cosine, over the probe texts, of mean-pooled ONNX and PyTorch outputs (padding included)."""
    import numpy as np
    import onnxruntime as ort

    enc, ref = _torch_reference(model_path, _PROBE_TEXTS)
    sess = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    feeds = {k: enc[k].numpy().astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    got = sess.run(None, feeds)[0]
    mask = feeds["attention_mask"]
    return float(np.min(np.sum(_pooled(got, mask) * _pooled(ref, mask), axis=1)))


def _quantize_int8(model_path: Path, fp32: Path, out: Path) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    started = time.perf_counter()
    with _quiet_third_party(), tempfile.TemporaryDirectory(dir=out.parent) as tmpdir:
        config = json.loads((model_path / "config.json").read_text())
        fusions = FusionOptions("bert")
        fusions.enable_skip_layer_norm = False  # Add + LayerNormalization run faster (INT8_GRAPH_LEVEL)
        fused = optimizer.optimize_model(
            str(fp32),
            model_type="bert",
            num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
            opt_level=1,
            optimization_options=fusions,
        )
        model = fused.model
        graph = model.graph
        producers = {o: n for n in graph.node for o in n.output}
        quantizable = [n.name for n in graph.node if n.op_type in ("MatMul", "Attention")]
        ffn_out = [
            n
            for n in graph.node
            if n.op_type == "MatMul" and n.input and getattr(producers.get(n.input[0]), "op_type", "") in _GELU_OPS
        ]
        layers = int(config["num_hidden_layers"])
        attention = [n for n in quantizable if n.startswith("Attention")]
        if len(ffn_out) != layers or len(attention) != layers:
            raise EmbeddingModelError(
                f"int8 recipe does not fit this graph: {len(attention)} fused attention and {len(ffn_out)} FFN output "
                f"MatMuls for {layers} layers"
            )
        channels = _outlier_channels(model, model_path, [n.input[0] for n in ffn_out])
        kept_fp32 = _split_off_channels(model, ffn_out, channels)
        split_path = Path(tmpdir) / "split.onnx"
        onnx.save(model, str(split_path))
        tmp = out.with_name(out.name + ".tmp")
        quantize_dynamic(
            str(split_path),
            str(tmp),
            per_channel=True,
            reduce_range=False,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=kept_fp32,
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        cos = _accept(model_path, tmp, out, INT8_MIN_COSINE, "int8 model too far from PyTorch fp32")
    return {
        **_file_info(out),
        "recipe": RECIPE_INT8,
        "graph_level": INT8_GRAPH_LEVEL,
        "quantized_nodes": len(quantizable),
        "fp32_nodes": kept_fp32,
        "outlier_channels": {n.name: c for n, c in zip(ffn_out, channels, strict=True)},
        "min_cosine_to_torch": round(cos, 5),
        "onnxruntime": ort.__version__,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _outlier_channels(model: Any, model_path: Path, tensors: list[str]) -> list[list[int]]:
    """Per tensor (an FFN output's input), the channels whose largest |value| on the probe texts is
    ``OUTLIER_RATIO`` times the 16th largest channel's, largest first, at most ``MAX_OUTLIER_CHANNELS``."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from transformers import AutoTokenizer

    from .model_files import max_tokens_for_path

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in tensors:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    tok = AutoTokenizer.from_pretrained(str(model_path))
    peaks: list[Any] = [None] * len(tensors)
    for text in _PROBE_TEXTS:  # one at a time: no padding rows in the peaks
        enc = tok([text], truncation=True, max_length=max_tokens_for_path(model_path), return_tensors="np")
        feeds = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in wanted}
        for i, value in enumerate(sess.run(tensors, feeds)):
            peak = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            peaks[i] = peak if peaks[i] is None else np.maximum(peaks[i], peak)
    chosen = []
    for peak in peaks:
        order = np.argsort(peak)[::-1]
        floor = peak[order[min(15, len(order) - 1)]]
        chosen.append([int(j) for j in order[:MAX_OUTLIER_CHANNELS] if peak[j] >= OUTLIER_RATIO * floor])
    return chosen


def _split_off_channels(model: Any, matmuls: list[Any], channels: list[list[int]]) -> list[str]:
    """Rewrite each ``MatMul(x, W)`` with outlier channels C as ``MatMul(x * mask_C, W) + MatMul(x[..., C], W[C])``
    so the quantiser's per-tensor scale of x no longer has to hold C; returns the small MatMuls (to stay fp32)."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    replace: dict[str, list[Any]] = {}
    small: list[str] = []
    for node, chans in zip(matmuls, channels, strict=True):
        if not chans:
            continue
        x, w_name = node.input
        w = numpy_helper.to_array(weights[w_name])
        p = node.name.rstrip("/") + "_outliers"
        mask = np.ones(w.shape[0], dtype=np.float32)
        mask[chans] = 0.0
        graph.initializer.extend(
            [
                numpy_helper.from_array(mask, p + "/mask"),
                numpy_helper.from_array(np.asarray(chans, dtype=np.int64), p + "/channels"),
                numpy_helper.from_array(np.ascontiguousarray(w[chans]), p + "/weight"),
            ]
        )
        replace[node.name] = [
            helper.make_node("Mul", [x, p + "/mask"], [p + "/masked"], name=p + "/Mul"),
            helper.make_node("MatMul", [p + "/masked", w_name], [p + "/main"], name=node.name),
            helper.make_node("Gather", [x, p + "/channels"], [p + "/picked"], name=p + "/Gather", axis=-1),
            helper.make_node("MatMul", [p + "/picked", p + "/weight"], [p + "/rest"], name=p + "/MatMul"),
            helper.make_node("Add", [p + "/main", p + "/rest"], [node.output[0]], name=p + "/Add"),
        ]
        small.append(p + "/MatMul")
    nodes = [new for node in graph.node for new in replace.get(node.name, [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    return small


def main(argv: list[str] | None = None) -> int:
    """``python -m memory_store.model_export [--no-int8] [--check]``: export (idempotent) or check the cache."""
    import argparse

    ap = argparse.ArgumentParser(description="Export the bundled embedding model to ONNX (fp32 + int8), once.")
    ap.add_argument("--no-int8", action="store_true", help="export fp32 only")
    ap.add_argument("--check", action="store_true", help="only say whether the export is cached (exit 1 if not)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from .model_files import DEFAULT_MODEL, default_model_path

    path = default_model_path()
    if args.check:
        found = find_export(DEFAULT_MODEL, path, need_int8=not args.no_int8)
        print(found.folder if found else f"not exported yet: {export_folder(DEFAULT_MODEL, path)}")
        return 0 if found else 1
    exported = ensure_export(DEFAULT_MODEL, path, int8=not args.no_int8)
    print(exported.folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
