#!/usr/bin/env bash
# Build a local Docker image of Redis without pulling anything.
#
#   bash harness/redis-image/build.sh [--force] [--no-verify]
#
# The image is assembled from the host's Debian packages: a minimal rootfs with
# redis-server (keeping its link name: redis-server -> redis-check-rdb, the
# binary picks its mode from argv[0]), every shared library it needs (found
# with ldd) and the dynamic loader, /etc/passwd, /etc/group, /tmp and /data,
# plus libclockshift.so (clockshift.c, beside this script) for clock jumps.
# Then `docker import`. Nothing is pulled from a registry.
#
# Environment:
#   LOCKLAB_REDIS_IMAGE   image name:tag to build (default locklab/redis:local)
#
# Options:
#   --force       rebuild even if the image already exists
#   --no-verify   skip the smoke test (PING; TIME jumping under libclockshift)
#
# Then adapters/install.sh installs the Python lock libraries of the soak's adapters
# (adapters/requirements.txt, pinned) into adapters/.venv.
#
# Idempotent: when the image already exists it is not rebuilt, only verified.
# Works non-interactively (CI=true, no stdin). Host packages are installed with
# apt-get only when missing (redis-server; redis-tools for redis-cli; gcc and
# libc6-dev to build libclockshift.so); `apt-get update` runs only then.
#
# Clock jumps inside a container of this image (see clockshift.c):
#
#   docker run -e LD_PRELOAD=/usr/lib/locklab/libclockshift.so \
#              -e LOCKLAB_CLOCK_FILE=/tmp/locklab-clock-offset IMAGE ...
#   printf '+3600s' > off && docker cp off CONTAINER:/tmp/locklab-clock-offset
#
#   The offset file holds a signed integer with an optional unit (ns, us, ms
#   = default, s); no file means offset 0. Replacing the file jumps the wall
#   clock (TIME, key expiry) at once; CLOCK_MONOTONIC is not touched, as with
#   an NTP step on a real host.
#
# libfaketime is NOT in the image: Debian's libfaketime 0.9.10 with Debian's
# redis-server (system jemalloc) hangs at start-up, e.g.
#   docker run -e LD_PRELOAD=.../libfaketime.so.1 -e FAKETIME=+10s IMAGE
#   (or FAKETIME_TIMESTAMP_FILE=... FAKETIME_NO_CACHE=1, same result)
# prints "libfaketime: Cannot recover from unexpected recursive calls to
# clock_gettime()" and never listens: jemalloc's initialisation calls
# clock_gettime(), libfaketime initialises inside it, a failing dlsym()
# (__ftime, versioned timer_settime) mallocs its error message, which re-enters
# jemalloc's unfinished initialisation. libclockshift.so avoids dlsym/malloc.
set -euo pipefail

IMAGE="${LOCKLAB_REDIS_IMAGE:-locklab/redis:local}"
FORCE=0
VERIFY=1
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        --no-verify) VERIFY=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -n -e 's/^# //p' -e 's/^#$//p'; exit 0 ;;
        *) echo "build.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
    esac
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLOCKSHIFT_SRC="$HERE/clockshift.c"
CLOCKSHIFT_IMAGE_LIB=/usr/lib/locklab/libclockshift.so
CLOCK_FILE=/tmp/locklab-clock-offset

log() { printf '[build.sh] %s\n' "$*"; }
die() { printf '[build.sh] error: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "the docker CLI is not installed"
docker version >/dev/null 2>&1 </dev/null \
    || die "no Docker engine: 'docker version' failed (is the daemon running, may this user use it?)"

# ---------------------------------------------------------------- host packages
SUDO=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=(sudo -n); fi
APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null || die "apt-get not found: install $* by hand"
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
        APT_UPDATED=1
    fi
    log "apt-get install -y $*"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null
}

image_exists() { docker image inspect "$IMAGE" >/dev/null 2>&1 </dev/null; }

# ---------------------------------------------------------------- build
ROOT=""
build_image() {
    local pkgs=()
    [ -x /usr/bin/redis-server ] || pkgs+=(redis-server)
    command -v redis-cli >/dev/null || pkgs+=(redis-tools)
    command -v cc >/dev/null || pkgs+=(gcc)
    [ -f /usr/include/stdio.h ] || pkgs+=(libc6-dev)
    if [ "${#pkgs[@]}" -gt 0 ]; then
        apt_install "${pkgs[@]}"
    else
        log "host packages present (redis-server, redis-tools, cc, libc headers)"
    fi
    [ -x /usr/bin/redis-server ] || die "/usr/bin/redis-server missing after install"
    [ -f "$CLOCKSHIFT_SRC" ] || die "$CLOCKSHIFT_SRC not found"

    ROOT="$(mktemp -d "${TMPDIR:-/tmp}/locklab-redis-rootfs.XXXXXX")"
    trap 'rm -rf "$ROOT"' EXIT
    log "assembling rootfs in $ROOT"

    # copy_path /abs/path: replicate a host path in $ROOT, keeping every
    # symlink on the way as a symlink (redis-server -> redis-check-rdb keeps its
    # link name, /lib -> usr/lib stays merged-usr) and copying what it points to.
    copy_path() {
        local p="$1" cur="" part tgt i=0 n
        local -a parts
        IFS=/ read -ra parts <<<"${p#/}"
        n=${#parts[@]}
        for part in "${parts[@]}"; do
            i=$((i + 1))
            [ -n "$part" ] || continue
            cur="$cur/$part"
            if [ -L "$cur" ]; then
                if [ ! -L "$ROOT$cur" ] && [ ! -e "$ROOT$cur" ]; then
                    mkdir -p "$(dirname "$ROOT$cur")"
                    ln -s "$(readlink "$cur")" "$ROOT$cur"
                fi
                tgt="$(readlink "$cur")"
                case "$tgt" in /*) ;; *) tgt="$(dirname "$cur")/$tgt" ;; esac
                copy_path "$(realpath -m -s "$tgt")"
            elif [ -d "$cur" ]; then
                mkdir -p "$ROOT$cur"
            elif [ "$i" -eq "$n" ]; then
                [ -e "$ROOT$cur" ] || cp -p "$cur" "$ROOT$cur"
            else
                die "cannot copy $p: $cur is not a directory"
            fi
        done
    }

    # copy_libs_of FILE: every library ldd lists for FILE, and the loader.
    copy_libs_of() {
        local lib
        while read -r lib; do
            [ -n "$lib" ] && copy_path "$lib"
        done < <(ldd "$1" | awk '/=>/ { if ($3 ~ /^\//) print $3; next } $1 ~ /^\// { print $1 }')
    }

    copy_path /usr/bin/redis-server
    copy_libs_of /usr/bin/redis-server
    log "redis-server: /usr/bin/redis-server -> $(readlink "$ROOT/usr/bin/redis-server"), $(find "$ROOT" -name '*.so*' | wc -l) shared objects"

    mkdir -p "$ROOT$(dirname "$CLOCKSHIFT_IMAGE_LIB")"
    cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$ROOT$CLOCKSHIFT_IMAGE_LIB" "$CLOCKSHIFT_SRC"
    copy_libs_of "$ROOT$CLOCKSHIFT_IMAGE_LIB"
    log "libclockshift: $CLOCKSHIFT_IMAGE_LIB (built from clockshift.c)"

    mkdir -p "$ROOT/etc" "$ROOT/tmp" "$ROOT/data"
    chmod 1777 "$ROOT/tmp"
    cat >"$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
redis:x:999:999:redis:/data:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
    cat >"$ROOT/etc/group" <<'EOF'
root:x:0:
redis:x:999:
nogroup:x:65534:
EOF
    chown 999:999 "$ROOT/data"

    log "docker import -> $IMAGE ($(du -sh "$ROOT" | cut -f1) rootfs)"
    tar -C "$ROOT" --numeric-owner -c . | docker import \
        --change 'ENTRYPOINT ["/usr/bin/redis-server"]' \
        --change 'EXPOSE 6379' \
        --change 'WORKDIR /data' \
        --change 'USER redis' \
        --change 'LABEL org.locklab.redis-image=1' \
        -m "locklab: redis-server from Debian packages (harness/redis-image/build.sh)" \
        - "$IMAGE" >/dev/null
    rm -rf "$ROOT"
    trap - EXIT
    log "built $IMAGE"
}

# ---------------------------------------------------------------- verify
CONTAINERS=()
cleanup_containers() {
    if [ "${#CONTAINERS[@]}" -gt 0 ]; then
        docker rm -f "${CONTAINERS[@]}" >/dev/null 2>&1 </dev/null || true
    fi
}

run_redis() { # run_redis [docker run options...]: prints the container id
    docker run --rm -d -p 127.0.0.1::6379 --label org.locklab.build-verify=1 "$@" "$IMAGE" \
        --protected-mode no --save "" --appendonly no --repl-diskless-sync-delay 0 </dev/null
}

host_port_of() { docker port "$1" 6379/tcp </dev/null | awk -F: '/^127\.0\.0\.1:/ { print $2; exit }'; }

cli() { local port="$1"; shift; redis-cli -h 127.0.0.1 -p "$port" "$@" </dev/null; }

wait_ping() { # wait_ping CONTAINER PORT
    local i
    for i in $(seq 1 50); do
        if [ "$(cli "$2" PING 2>/dev/null)" = "PONG" ]; then return 0; fi
        sleep 0.1
    done
    docker logs "$1" 2>&1 | tail -n 20 >&2 || true
    return 1
}

time_delta() { # time_delta PORT: Redis TIME minus host time, in seconds
    local t now
    t="$(cli "$1" TIME | head -n1)"
    now="$(date +%s)"
    echo $((t - now))
}

verify_image() {
    command -v redis-cli >/dev/null || apt_install redis-tools
    trap cleanup_containers EXIT
    local cid port delta

    log "verify: docker run $IMAGE; PING via 127.0.0.1"
    cid="$(run_redis)"
    CONTAINERS+=("$cid")
    port="$(host_port_of "$cid")"
    [ -n "$port" ] || die "verify: no port published for 6379 on 127.0.0.1"
    wait_ping "$cid" "$port" || die "verify: redis in $IMAGE did not answer PING on 127.0.0.1:$port"
    log "verify: PONG from 127.0.0.1:$port ($(cli "$port" INFO server | tr -d '\r' | grep '^redis_version:'))"
    docker rm -f "$cid" >/dev/null </dev/null

    local probe="locklab-probe-$$" has_clockshift=0
    docker create --name "$probe" "$IMAGE" >/dev/null </dev/null
    CONTAINERS+=("$probe")
    if docker cp "$probe:$CLOCKSHIFT_IMAGE_LIB" - >/dev/null 2>&1 </dev/null; then has_clockshift=1; fi
    docker rm -f "$probe" >/dev/null 2>&1 </dev/null || true
    if [ "$has_clockshift" -eq 0 ]; then
        log "verify: $IMAGE has no $CLOCKSHIFT_IMAGE_LIB: no clock jumps with this image (rebuild with --force)"
        CONTAINERS=()
        trap - EXIT
        return 0
    fi

    log "verify: clock jump with LD_PRELOAD=$CLOCKSHIFT_IMAGE_LIB"
    cid="$(run_redis -e LD_PRELOAD=$CLOCKSHIFT_IMAGE_LIB -e LOCKLAB_CLOCK_FILE=$CLOCK_FILE)"
    CONTAINERS+=("$cid")
    port="$(host_port_of "$cid")"
    wait_ping "$cid" "$port" || die "verify: redis with libclockshift did not start"
    delta="$(time_delta "$port")"
    if [ "$delta" -lt -2 ] || [ "$delta" -gt 2 ]; then
        die "verify: without an offset file TIME is off by ${delta}s"
    fi
    [ "$(cli "$port" SET locklab:probe 1 PX 600000)" = "OK" ] || die "verify: SET failed"

    local off
    off="$(mktemp "${TMPDIR:-/tmp}/locklab-clock-offset.XXXXXX")"
    printf '+3600s\n' >"$off"
    chmod 0644 "$off"
    docker cp "$off" "$cid:$CLOCK_FILE" </dev/null
    rm -f "$off"
    delta="$(time_delta "$port")"
    if [ "$delta" -lt 3598 ] || [ "$delta" -gt 3602 ]; then
        die "verify: after writing +3600s to $CLOCK_FILE TIME is off by ${delta}s (want ~3600)"
    fi
    # a 10-minute key must be gone after a one-hour jump of the node's clock
    [ "$(cli "$port" EXISTS locklab:probe)" = "0" ] || die "verify: key did not expire after the clock jump"
    log "verify: TIME jumped by ${delta}s while running; a 600 s key expired"
    docker rm -f "$cid" >/dev/null </dev/null
    CONTAINERS=()
    trap - EXIT
    log "verify: ok"
}

if image_exists && [ "$FORCE" -eq 0 ]; then
    log "image $IMAGE already exists (use --force to rebuild)"
else
    OLD_ID=""
    if [ "$FORCE" -eq 1 ] && image_exists; then
        OLD_ID="$(docker image inspect -f '{{.Id}}' "$IMAGE" </dev/null)"
        log "--force: rebuilding $IMAGE (was $OLD_ID)"
    fi
    build_image
    if [ -n "$OLD_ID" ] && [ "$OLD_ID" != "$(docker image inspect -f '{{.Id}}' "$IMAGE" </dev/null)" ]; then
        # the old image is untagged now; remove it unless a container still uses it
        docker image rm "$OLD_ID" >/dev/null 2>&1 </dev/null || log "old image $OLD_ID still in use; left in place"
    fi
fi

if [ "$VERIFY" -eq 1 ]; then verify_image; fi
log "done: $IMAGE"

# The lock libraries the soak's adapters drive (adapters/), which the adapter tests
# run: pinned, into the project-local adapters/.venv (idempotent).
bash "$HERE/../../adapters/install.sh"
