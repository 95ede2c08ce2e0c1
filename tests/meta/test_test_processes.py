"""Every process that runs tests, the parallel workers included, keeps the suite's settings: one thread per
numerical library and its own PostgreSQL database."""

import os

from support import BASE_POSTGRES_URL, POSTGRES_URL, WORKER, worker_postgres_url


def test_this_test_process_runs_one_thread_per_numerical_library():
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MEMTRIAL_TORCH_THREADS"):
        assert os.environ.get(variable) == "1", f"{variable}={os.environ.get(variable)!r} in worker {WORKER}"
    import torch

    from memtrial.drafting.embeddings import get_embedder

    get_embedder("torch").encode(["one thread"])  # loading the model applies MEMTRIAL_TORCH_THREADS
    assert torch.get_num_threads() == 1, f"torch runs {torch.get_num_threads()} threads in worker {WORKER}"


def test_each_parallel_worker_has_a_postgres_database_of_its_own():
    assert worker_postgres_url("postgresql://u:p@db:5433/test?sslmode=disable", "gw1") == (
        "postgresql://u:p@db:5433/test_gw1?sslmode=disable"
    )
    assert worker_postgres_url("postgresql://postgres@127.0.0.1:5432/test", None).endswith("/test")
    if WORKER:
        assert POSTGRES_URL.endswith(f"_{WORKER}") and POSTGRES_URL != BASE_POSTGRES_URL
    else:
        assert POSTGRES_URL == BASE_POSTGRES_URL
