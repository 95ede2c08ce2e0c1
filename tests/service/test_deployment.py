"""The deployment files agree with the service: compose wires PostgreSQL into the service."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_postgres_redis_two_replicas_and_a_dask_cluster_for_the_refits():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    replicas = [services["memtrial"], services["memtrial-2"]]
    assert services["memtrial"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for replica in replicas:  # one database, one Dask scheduler
        assert replica["environment"]["MEMTRIAL_DATABASE_URL"].startswith(
            "postgresql://memtrial:memtrial@postgres:5432/"
        )
        assert replica["environment"]["MEMTRIAL_DASK_SCHEDULER"] == "tcp://dask-scheduler:8786"
        assert replica["environment"]["MEMTRIAL_REDIS_URL"] == "redis://redis:6379/0"  # limits shared by replicas
    from service.settings import Settings

    defaults = Settings()  # the shutdown's bound (docs/reliability.md): requests, then drafting requests' releases
    needed = defaults.shutdown_seconds + 2 * (defaults.db_pool_timeout + 2 * defaults.db_statement_timeout)
    for replica in replicas:
        assert float(replica["stop_grace_period"].removesuffix("s")) >= needed, "docker would kill a stopping server"
    assert services["redis"]["image"].startswith("redis:")
    assert services["memtrial"]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert "8000:8000" in services["memtrial"]["ports"] and "8001:8000" in services["memtrial-2"]["ports"]
    assert "--no-migrate" in services["memtrial-2"]["command"]  # the first replica migrates
    assert services["dask-scheduler"]["command"][:2] == ["dask", "scheduler"]
    worker = services["dask-worker"]
    assert worker["command"][:3] == ["dask", "worker", "tcp://dask-scheduler:8786"]
    assert worker["environment"]["MEMTRIAL_DATABASE_URL"] == replicas[0]["environment"]["MEMTRIAL_DATABASE_URL"]


def test_dockerfile_serves_with_migrations_on_start():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["memtrial", "serve", "--host", "0.0.0.0"' in dockerfile
    for folder in ("memtrial", "service", "alembic"):
        assert f"COPY {folder} ./{folder}" in dockerfile
    assert "-e '.[service,bayes,otel]'" in dockerfile  # the service's own extra: the core alone cannot serve
