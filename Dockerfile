# The memtrial service. Build: docker build -t memtrial .   (see docker-compose.yml)
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY memtrial ./memtrial
COPY service ./service
COPY backtest ./backtest
COPY alembic ./alembic
RUN pip install --no-cache-dir -e .
EXPOSE 8000
CMD ["memtrial", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
