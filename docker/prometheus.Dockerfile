# Prometheus from Debian's package, with the project's scrape config and
# rules (docker/prometheus/), for the compose profile "monitoring".
# BASE_IMAGE names the base image (compose: SUDOKU_BASE_IMAGE).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
	&& apt-get install -y --no-install-recommends prometheus \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
	&& mkdir -p /prometheus && chown prometheus:prometheus /prometheus
COPY docker/prometheus/prometheus.yml docker/prometheus/rules.yml /etc/prometheus/
RUN promtool check config /etc/prometheus/prometheus.yml
USER prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--storage.tsdb.retention.time=2d", "--web.listen-address=:9090"]
