# Debian's prometheus-nginx-exporter, scraping nginx's internal stub_status
# (nginx:8082, never published) and serving Prometheus metrics on 9113.
# BASE_IMAGE names the base image; pin a digest with e.g.
# --build-arg BASE_IMAGE=debian:bookworm-slim@sha256:... (compose: SUDOKU_BASE_IMAGE).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# No setuid or setgid file (su, passwd, mount...), as in the nginx image:
# nothing gains a privilege on exec, where Swarm cannot set
# no-new-privileges (docker/stack.yml).
RUN apt-get update \
	&& apt-get install -y --no-install-recommends prometheus-nginx-exporter \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
	&& find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
USER nobody
EXPOSE 9113
HEALTHCHECK --interval=5s --timeout=2s --start-period=5s --retries=3 \
	CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9113 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '^nginx_up 1' <&3"]
ENTRYPOINT ["/usr/bin/prometheus-nginx-exporter"]
CMD ["-nginx.scrape-uri=http://nginx:8082/stub_status", "-nginx.retries=10", "-nginx.retry-interval=1s", "-web.listen-address=:9113"]
