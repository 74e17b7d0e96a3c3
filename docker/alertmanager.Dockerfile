# Alertmanager from Debian's package, with the project's routing
# (docker/prometheus/alertmanager.yml), for the compose profile
# "monitoring": Prometheus sends it every firing alert of rules.yml.
# BASE_IMAGE names the base image (compose: SUDOKU_BASE_IMAGE).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# No setuid or setgid file (su, passwd, mount...), as in the nginx image.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends prometheus-alertmanager \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
	&& mkdir -p /alertmanager && chown prometheus:prometheus /alertmanager \
	&& find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
COPY docker/prometheus/alertmanager.yml /etc/prometheus/alertmanager.yml
RUN amtool check-config /etc/prometheus/alertmanager.yml
USER prometheus
EXPOSE 9093
# One instance: --cluster.listen-address= turns the gossip between
# replicas (port 9094) off.
ENTRYPOINT ["/usr/bin/prometheus-alertmanager", "--config.file=/etc/prometheus/alertmanager.yml", "--storage.path=/alertmanager", "--web.listen-address=:9093", "--cluster.listen-address="]
