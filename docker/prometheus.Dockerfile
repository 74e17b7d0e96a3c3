# Prometheus from Debian's package, with the project's scrape config and
# rules (docker/prometheus/), for the compose profile "monitoring".
# BASE_IMAGE names the base image (compose: SUDOKU_BASE_IMAGE).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# No setuid or setgid file (su, passwd, mount...), as in the nginx image.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends prometheus \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
	&& mkdir -p /prometheus && chown prometheus:prometheus /prometheus \
	&& find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
COPY docker/prometheus/prometheus.yml docker/prometheus/prometheus-swarm.yml docker/prometheus/prometheus-k8s.yml docker/prometheus/rules.yml /etc/prometheus/
RUN promtool check config /etc/prometheus/prometheus.yml /etc/prometheus/prometheus-swarm.yml /etc/prometheus/prometheus-k8s.yml
USER prometheus
EXPOSE 9090
# The compose stack's configuration by default; on Swarm the command is
# --config.file=/etc/prometheus/prometheus-swarm.yml, on Kubernetes
# --config.file=/etc/prometheus/prometheus-k8s.yml.
ENTRYPOINT ["/usr/bin/prometheus", "--storage.tsdb.path=/prometheus", "--storage.tsdb.retention.time=2d", "--web.listen-address=:9090"]
CMD ["--config.file=/etc/prometheus/prometheus.yml"]
