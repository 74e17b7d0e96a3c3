# nginx from Debian bookworm (1.22, the version CI tests) with the project's
# config, supervised by sudoku-edge (worker discovery, TLS, reloads).
# Classic builder compatible (docker-compose v1): no BuildKit-only syntax.
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# The standard library, compiled once into the build cache of this layer:
# the classic builder has no cache mounts, so without it every source change
# recompiles net/http and crypto from scratch. Same lines in both Go
# Dockerfiles, so the layer is shared.
RUN go build std
COPY go.mod go.sum* ./
RUN go mod download
# Only what the Go build reads (the package and its embedded templates), so
# an edit to the nginx config files below does not recompile the edge.
COPY nginx/*.go nginx/
COPY nginx/templates/ nginx/templates/
COPY cmd/sudoku-edge/ cmd/sudoku-edge/
RUN go build -ldflags='-s -w' -o /out/sudoku-edge ./cmd/sudoku-edge

FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends nginx \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /etc/nginx/sites-enabled /etc/nginx/sites-available \
		/etc/nginx/conf.d /etc/nginx/snippets /var/www \
	&& mkdir -p /run/sudoku-edge /var/lib/sudoku-edge \
	&& chown www-data:www-data /run/sudoku-edge /var/lib/sudoku-edge /var/lib/nginx \
	&& ln -sf /dev/stdout /var/log/nginx/access.log \
	&& ln -sf /dev/stderr /var/log/nginx/error.log
COPY nginx/nginx.conf nginx/sudoku-locations.conf nginx/sudoku-fastcgi.conf nginx/sudoku-www.conf /etc/nginx/
COPY nginx/www/ /usr/share/sudoku-www/
COPY --from=build /out/sudoku-edge /usr/local/bin/sudoku-edge
# nginx listens on unprivileged ports only (8080 HTTP, 8443 HTTPS, 8082
# stub_status, 8081 the edge's ACME responder), so nothing runs as root.
USER www-data
EXPOSE 8080 8443
# bash's /dev/tcp: the image has no curl. stub_status answers once nginx runs.
HEALTHCHECK --interval=5s --timeout=2s --start-period=5s --retries=3 \
	CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8082 && printf 'GET /stub_status HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '^Active connections' <&3"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/sudoku-edge"]
