# Pebble, Let's Encrypt's test ACME server, from Debian's package: the CA for
# `make test-tls`. Its listener certificate is generated per run by
# tests/tls/run.sh and mounted at /pebble (Debian ships none).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
	&& apt-get install -y --no-install-recommends pebble \
	&& rm -rf /var/lib/apt/lists/*
COPY pebble-config.json /etc/pebble/config.json
EXPOSE 14000 15000
# No random validation sleeps and no rejected nonces: deterministic tests.
ENV PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0
HEALTHCHECK --interval=1s --timeout=2s --retries=30 \
	CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/14000"]
# Pebble listens on unprivileged ports and reads a world-readable throwaway
# key, so it runs as nobody like every other container of the project.
USER nobody
ENTRYPOINT ["/usr/bin/pebble", "-config", "/etc/pebble/config.json"]
