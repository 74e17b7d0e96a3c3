# nginx from Debian bookworm (1.22, the version CI tests) with the project's
# config, supervised by sudoku-edge (worker discovery, TLS, reloads).
# Classic builder compatible (docker-compose v1): no BuildKit-only syntax.
# GO_IMAGE and BASE_IMAGE name the base images; pin digests with e.g.
# --build-arg BASE_IMAGE=debian:bookworm-slim@sha256:... (compose:
# SUDOKU_GO_IMAGE, SUDOKU_BASE_IMAGE).
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${GO_IMAGE} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# The standard library, compiled once into the build cache of this layer:
# the classic builder has no cache mounts, so without it every source change
# recompiles net/http and crypto from scratch. Same lines in both Go
# Dockerfiles, so the layer is shared.
RUN go build std
COPY go.mod go.sum* ./
# Only the modules sudoku-edge's packages import, not the tests' (k8s.io/api,
# chromedp, pebble, kin-openapi), which every build would download.
# TestImageModules (cmd/images_test.go) fails when the list goes stale.
RUN go mod download \
	github.com/beorn7/perks \
	github.com/caddyserver/certmagic \
	github.com/caddyserver/zerossl \
	github.com/cespare/xxhash/v2 \
	github.com/klauspost/cpuid/v2 \
	github.com/libdns/libdns \
	github.com/mattn/go-colorable \
	github.com/mattn/go-isatty \
	github.com/mholt/acmez/v3 \
	github.com/miekg/dns \
	github.com/munnerz/goautoneg \
	github.com/prometheus/client_golang \
	github.com/prometheus/client_model \
	github.com/prometheus/common \
	github.com/prometheus/procfs \
	github.com/rs/zerolog \
	github.com/zeebo/blake3 \
	go.uber.org/multierr \
	go.uber.org/zap \
	go.uber.org/zap/exp \
	golang.org/x/crypto \
	golang.org/x/net \
	golang.org/x/sys \
	golang.org/x/text \
	google.golang.org/protobuf
# Only what the Go build reads: the packages and their embedded templates,
# nginx.conf and the sudoku-*.conf files among them.
COPY nginx/*.go nginx/*.conf nginx/
COPY nginx/conf/ nginx/conf/
COPY nginx/discover/ nginx/discover/
COPY nginx/edgetls/ nginx/edgetls/
COPY nginx/logs/ nginx/logs/
COPY nginx/proc/ nginx/proc/
# cmd/contract: the worker's limits that nginx's configuration allows for.
COPY cmd/cli/ cmd/cli/
COPY cmd/contract/ cmd/contract/
COPY cmd/sudoku-edge/ cmd/sudoku-edge/
# Stamped into -version and sudoku_build_info (make passes them).
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=
ARG BUILD_DATE=
ENV VERSION_PKG=github.com/prometheus/common/version
RUN go build -ldflags="-s -w -X ${VERSION_PKG}.Version=${VERSION} -X ${VERSION_PKG}.Revision=${REVISION} -X ${VERSION_PKG}.Branch=${BRANCH} -X ${VERSION_PKG}.BuildDate=${BUILD_DATE}" \
	-o /out/sudoku-edge ./cmd/sudoku-edge
# /etc/nginx: the templates rendered with the image's paths and ports (the
# flags' defaults), by the code that renders them for the host stack.
RUN /out/sudoku-edge -render-conf /out/etc-nginx

FROM ${BASE_IMAGE}
# No setuid or setgid file (su, passwd, mount...): nothing gains a privilege
# on exec, where Swarm cannot set no-new-privileges (docker/stack.yml).
# ca-certificates: certmagic verifies the ACME server (Let's Encrypt)
# against the system roots in /etc/ssl/certs.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends nginx ca-certificates \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /etc/nginx/sites-enabled /etc/nginx/sites-available \
		/etc/nginx/conf.d /etc/nginx/snippets /var/www \
	&& mkdir -p /run/sudoku-edge /var/lib/sudoku-edge \
	&& chown www-data:www-data /run/sudoku-edge /var/lib/sudoku-edge /var/lib/nginx \
	&& ln -sf /dev/stdout /var/log/nginx/access.log \
	&& ln -sf /dev/stderr /var/log/nginx/error.log \
	&& find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
COPY --from=build /out/etc-nginx/ /etc/nginx/
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
