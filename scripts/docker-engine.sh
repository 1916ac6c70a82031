#!/usr/bin/env bash
# A private Docker engine for building and running the project's images without a registry.
#
#   scripts/docker-engine.sh install                 apt-get install docker.io debootstrap
#   scripts/docker-engine.sh start RUN_DIR DATA_ROOT start dockerd; prints its DOCKER_HOST
#   scripts/docker-engine.sh stop RUN_DIR            stop that dockerd by its pid
#   scripts/docker-engine.sh base-image CACHE_DIR    import local/python:3.11-slim-bookworm
#
# The engine uses host networking only: no bridge, no iptables/NAT rules, IP forwarding left
# alone, so it changes nothing in the host's network. RUN_DIR holds the socket, pid file and
# log (keep its path short: unix socket paths are limited to 108 bytes); DATA_ROOT holds
# images and build cache and may be kept between runs to make later builds fast.
# `base-image` needs DOCKER_HOST set to the engine; it debootstraps Debian bookworm (Python
# 3.11) into CACHE_DIR once and imports it, since no container registry is reachable.
set -euo pipefail

BASE_IMAGE=local/python:3.11-slim-bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
START_TIMEOUT=${START_TIMEOUT:-90}

die() { echo "docker-engine: $*" >&2; exit 1; }

install_tools() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    [ -x /usr/bin/docker ] || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "needs root to install ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}

start_engine() {
    local run_dir=$1 data_root=$2
    mkdir -p "$run_dir" "$data_root"
    command -v dockerd >/dev/null || die "dockerd not installed (run: $0 install)"
    local socket="$run_dir/docker.sock"
    dockerd --data-root "$data_root" --exec-root "$run_dir/exec" -H "unix://$socket" \
        --pidfile "$run_dir/dockerd.pid" --bridge=none --iptables=false --ip6tables=false \
        --ip-forward=false --ip-masq=false >"$run_dir/dockerd.log" 2>&1 &
    local pid=$!
    echo "$pid" >"$run_dir/dockerd.launched.pid"
    local deadline=$((SECONDS + START_TIMEOUT))
    until DOCKER_HOST="unix://$socket" /usr/bin/docker version >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            die "dockerd exited: $(tail -n 5 "$run_dir/dockerd.log" | tr '\n' ' ')"
        fi
        if [ $SECONDS -ge $deadline ]; then
            stop_engine "$run_dir"
            die "dockerd did not answer within ${START_TIMEOUT}s"
        fi
        sleep 0.5
    done
    echo "unix://$socket"
}

stop_engine() {
    local run_dir=$1 pid
    pid=$(cat "$run_dir/dockerd.launched.pid" 2>/dev/null) || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        # dockerd stops its containers and its containerd before it exits.
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$run_dir/dockerd.launched.pid"
    unmount_below "$run_dir"
}

# dockerd leaves a handle on the host's network namespace mounted in its exec-root.
unmount_below() {
    local mount_point
    awk -v below="$1/" 'index($2, below) == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r mount_point; do
            umount "$mount_point" 2>/dev/null || umount --lazy "$mount_point"
        done
}

build_rootfs() {
    local rootfs=$1
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$DEBIAN_MIRROR" >"$rootfs.log" 2>&1 \
        || die "debootstrap failed: $(tail -n 5 "$rootfs.log" | tr '\n' ' ')"
    # Extra CAs of this host (e.g. a TLS-inspecting proxy), else pip in builds fails TLS.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    fi
    chroot "$rootfs" update-ca-certificates >/dev/null
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
}

base_image() {
    local cache_dir=$1
    [ -n "${DOCKER_HOST:-}" ] || die "DOCKER_HOST must point at the engine"
    /usr/bin/docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
    mkdir -p "$cache_dir"
    local archive="$cache_dir/bookworm-rootfs.tar"
    if [ ! -s "$archive" ]; then
        build_rootfs "$cache_dir/rootfs"
        tar -C "$cache_dir/rootfs" -cf "$archive.partial" .
        mv "$archive.partial" "$archive"
        rm -rf "$cache_dir/rootfs"
    fi
    /usr/bin/docker import - "$BASE_IMAGE" <"$archive" >/dev/null
}

case "${1:-}" in
    install) install_tools ;;
    start) [ $# -eq 3 ] || die "usage: $0 start RUN_DIR DATA_ROOT"; start_engine "$2" "$3" ;;
    stop) [ $# -eq 2 ] || die "usage: $0 stop RUN_DIR"; stop_engine "$2" ;;
    base-image) [ $# -eq 2 ] || die "usage: $0 base-image CACHE_DIR"; base_image "$2" ;;
    *) die "usage: $0 install | start RUN_DIR DATA_ROOT | stop RUN_DIR | base-image CACHE_DIR" ;;
esac
