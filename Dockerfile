# One image for web, worker and beat (docker-compose.yml picks the command).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# Runtime dependencies only (no test tools, no NVML: the agent is its own package).
COPY requirements/runtime.txt requirements/runtime.txt
RUN pip install --no-cache-dir --require-hashes -r requirements/runtime.txt
COPY . .
RUN SECRET_KEY=build-only STATIC_MANIFEST=true deploy/collectstatic.sh
# Run as an unprivileged user; var/ (beat's schedule file) is the only place it writes.
RUN useradd --system --no-create-home perfhub && mkdir -p var && chown perfhub var
USER perfhub
EXPOSE 8000
CMD ["deploy/web.sh"]
