# The FastCGI worker: a static Go binary in an otherwise empty image.
# Classic builder compatible (docker-compose v1): no BuildKit-only syntax.
# GO_IMAGE names the build image; pin a digest with e.g.
# --build-arg GO_IMAGE=golang:1.26-bookworm@sha256:... (compose: SUDOKU_GO_IMAGE).
ARG GO_IMAGE=golang:1.26-bookworm
FROM ${GO_IMAGE} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# The standard library, compiled once into the build cache of this layer:
# the classic builder has no cache mounts, so without it every source change
# recompiles net/http and crypto from scratch. Same lines in both Go
# Dockerfiles, so the layer is shared.
RUN go build std
# Dependencies first: this layer stays cached until go.mod/go.sum change.
COPY go.mod go.sum* ./
# Only the modules the worker's packages import, not the tests' (k8s.io/api,
# chromedp, pebble, kin-openapi), which every build would download.
# TestImageModules (cmd/images_test.go) fails when the list goes stale.
RUN go mod download \
	github.com/beorn7/perks \
	github.com/cespare/xxhash/v2 \
	github.com/mattn/go-colorable \
	github.com/mattn/go-isatty \
	github.com/munnerz/goautoneg \
	github.com/prometheus/client_golang \
	github.com/prometheus/client_model \
	github.com/prometheus/common \
	github.com/prometheus/procfs \
	github.com/rs/zerolog \
	golang.org/x/sys \
	google.golang.org/protobuf
COPY solver/ solver/
COPY fcgi/ fcgi/
COPY cmd/cli/ cmd/cli/
COPY cmd/contract/ cmd/contract/
COPY cmd/sudoku-fcgi/ cmd/sudoku-fcgi/
# Stamped into -version and sudoku_build_info (make passes them).
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=
ARG BUILD_DATE=
ENV VERSION_PKG=github.com/prometheus/common/version
RUN go build -ldflags="-s -w -X ${VERSION_PKG}.Version=${VERSION} -X ${VERSION_PKG}.Revision=${REVISION} -X ${VERSION_PKG}.Branch=${BRANCH} -X ${VERSION_PKG}.BuildDate=${BUILD_DATE}" \
	-o /out/sudoku-fcgi ./cmd/sudoku-fcgi

FROM scratch
COPY --from=build /out/sudoku-fcgi /usr/local/bin/sudoku-fcgi
# Any unprivileged id works; scratch has no /etc/passwd to name it.
USER 65532:65532
ENV SUDOKU_FCGI_LISTEN=:9000 SUDOKU_FCGI_INTERNAL_LISTEN=:9001
EXPOSE 9000 9001
# The binary checks its own /readyz: no shell or curl needed in the image.
HEALTHCHECK --interval=5s --timeout=2s --start-period=5s --retries=3 \
	CMD ["/usr/local/bin/sudoku-fcgi", "-healthcheck"]
ENTRYPOINT ["/usr/local/bin/sudoku-fcgi"]
