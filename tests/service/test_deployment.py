"""The deployment files agree with the service: compose wires PostgreSQL into the service."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_postgres_and_the_service_against_it():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    service = services["memtrial"]
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert service["environment"]["MEMTRIAL_DATABASE_URL"].startswith("postgresql://memtrial:memtrial@postgres:5432/")
    assert "8000:8000" in service["ports"]


def test_dockerfile_serves_with_migrations_on_start():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["memtrial", "serve", "--host", "0.0.0.0"' in dockerfile
    for folder in ("memtrial", "service", "alembic"):
        assert f"COPY {folder} ./{folder}" in dockerfile
