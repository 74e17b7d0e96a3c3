#!/usr/bin/env bash
# seed-images.sh builds local stand-ins for the two base images the project's
# Dockerfiles use, debian:bookworm-slim and golang:1.26-bookworm, when they are
# missing and cannot be pulled (a host with no container registry). Hosts that
# can pull never need it: it does nothing when the images are present or
# pullable. Needs root, debootstrap and a Go toolchain on the host.
# SUDOKU_BASE_IMAGE and SUDOKU_GO_IMAGE name other tags, as for compose (a
# digest-pinned name can only be pulled, not seeded).
set -euo pipefail

DEBIAN_IMAGE=${SUDOKU_BASE_IMAGE:-debian:bookworm-slim}
GO_IMAGE=${SUDOKU_GO_IMAGE:-golang:1.26-bookworm}

log() { printf 'seed-images: %s\n' "$*" >&2; }

have() { docker image inspect "$1" >/dev/null 2>&1; }

try_pull() {
	log "trying to pull $1"
	timeout 60 docker pull -q "$1" >/dev/null 2>&1
}

seed_debian() {
	command -v debootstrap >/dev/null || {
		log "installing debootstrap"
		apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
	}
	local mirror rootfs
	mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	mirror=${mirror:-http://deb.debian.org/debian}
	rootfs=$(mktemp -d)
	trap 'rm -rf "$rootfs"' RETURN
	log "debootstrap bookworm from $mirror (about a minute)"
	debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" >/dev/null
	# Hosts behind an egress proxy with their own CA: trust it inside the
	# image too, or TLS downloads during builds (go mod download) fail.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
		chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
	fi
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	log "importing $DEBIAN_IMAGE"
	tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - "$DEBIAN_IMAGE" >/dev/null
}

seed_go() {
	local ctx goroot
	goroot=$(go env GOROOT)
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' RETURN
	cp -a "$goroot" "$ctx/go"
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $DEBIAN_IMAGE
COPY go /usr/local/go
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
DOCKERFILE
	log "building $GO_IMAGE from the host's Go ($(go version | awk '{print $3}'))"
	docker build -q -t "$GO_IMAGE" "$ctx" >/dev/null
}

if have "$DEBIAN_IMAGE" || try_pull "$DEBIAN_IMAGE"; then
	log "$DEBIAN_IMAGE present"
else
	seed_debian
fi
if have "$GO_IMAGE" || try_pull "$GO_IMAGE"; then
	log "$GO_IMAGE present"
else
	seed_go
fi
log "base images ready"
