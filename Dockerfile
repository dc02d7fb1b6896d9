# The ctrlaudit image the compose stack's workers run from: the project installed at build time
# with the capture extra, pinned by constraints.txt (nothing is installed or downloaded when a
# container starts), with the native archive decoder
# built against zlib and OpenSSL.
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev zlib1g-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml setup.py README.md constraints.txt ./
COPY schemas ./schemas
COPY services ./services
COPY replay ./replay
COPY checks ./checks
COPY ctrlaudit ./ctrlaudit
RUN pip install --no-cache-dir -c constraints.txt '.[capture]' \
 && python -c "from schemas import fastflat; assert fastflat.chain_available(), 'native decoder not built'"

WORKDIR /work
# the workers' health: Kafka answers within 5 s (services/capture/__main__.py health)
HEALTHCHECK --interval=15s --timeout=10s --start-period=30s --retries=4 CMD ["python", "-m", "services.capture", "health"]
CMD ["ctrlaudit", "--help"]
