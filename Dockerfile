# One image for web, worker and beat (docker-compose.yml picks the command).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.lock pyproject.toml ./
RUN pip install --no-cache-dir -r requirements.lock
COPY . .
RUN SECRET_KEY=build-only STATIC_MANIFEST=true python manage.py collectstatic --no-input
EXPOSE 8000
CMD ["gunicorn", "perfhub.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
