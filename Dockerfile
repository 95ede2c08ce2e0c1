# The memtrial service. Build: docker build -t memtrial .   (see docker-compose.yml)
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY memtrial ./memtrial
COPY service ./service
COPY backtest ./backtest
COPY alembic ./alembic
# the service, the full-Bayes learner (refits run on the Dask workers built from this image) and traces;
# torch from its CPU index (the default index would bring a multi-GB CUDA build)
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -e '.[service,bayes,otel]' --config-settings editable_mode=compat
EXPOSE 8000
CMD ["memtrial", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
