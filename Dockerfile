# lance-namespace-adapter: the Lance REST Namespace server, configured by LANCE_ADAPTER_*.
# Build:  docker build -t lance-namespace-adapter .
# Run:    docker run -p 2333:2333 -v lance-data:/data lance-namespace-adapter
ARG PYTHON_IMAGE=python:3.12-slim

# ---- build stage: a virtual environment with the adapter and every catalog client (its
# extra [all]), made by scripts/docker-install.sh
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY scripts/docker-install.sh /usr/local/bin/docker-install.sh
COPY pyproject.toml README.md rest.yaml ./
COPY lock/python.txt lock/
COPY app/ app/
COPY backends/ backends/
COPY lance_adapter_spark/ lance_adapter_spark/
RUN sh /usr/local/bin/docker-install.sh /src /opt/venv

# ---- runtime stage: the environment only, run as an unprivileged user
FROM ${PYTHON_IMAGE}
ARG UID=10001
RUN groupadd --system --gid "${UID}" lance \
    && useradd --system --uid "${UID}" --gid lance --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin lance \
    && mkdir -p /data \
    && chown lance:lance /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LANCE_ADAPTER_HOST=0.0.0.0 \
    LANCE_ADAPTER_PORT=2333 \
    LANCE_ADAPTER_IMPL=dir \
    LANCE_ADAPTER_PROP_ROOT=/data
WORKDIR /data
VOLUME ["/data"]
USER ${UID}:${UID}
EXPOSE 2333
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-P", "-m", "app.container_probe"]
ENTRYPOINT ["lance-adapter"]
CMD ["serve"]
