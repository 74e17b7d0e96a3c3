# A Swarm node for tests/swarm/cluster.sh: a Docker engine (Debian's
# docker.io) that runs inside a container, with the tools the test calls in
# it. Built from the locally seeded base image, so it needs no registry.
FROM debian:bookworm-slim
RUN apt-get update -qq \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		docker.io iptables iproute2 ca-certificates curl \
	&& rm -rf /var/lib/apt/lists/*
