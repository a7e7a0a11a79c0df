#!/bin/bash
# The Debian guest lab (issue 47): mmlockd's Debian package on Debian 12 guests with systemd as
# PID 1, on Debian's own kernels (bookworm's default 6.1 and its 6.12), under qemu (TCG).
# `make lab-debian` runs this; see lab/README.md, "The Debian guest lab".
#
#   lab/debian.sh               everything: root, packages, image, one boot per kernel, results
#   lab/debian.sh root          the debootstrap root with both kernels (cached)
#   lab/debian.sh deb           `make deb` and the previous version (the same package, version
#                               lowered) for the upgrade check (cached by the package's hash)
#   lab/debian.sh image         the root, the packages and the guest checks as a raw ext4 image
#   lab/debian.sh boot KERNEL   boot one kernel (6.1 or 6.12) and run the checks (cached unless
#                               DEBIAN_RERUN=1)
#   lab/debian.sh results       lab/results/debian.md and tests/data/debian-* from the runs
#
# Environment: DEBIAN_KERNELS ("6.1 6.12"), DEBIAN_RERUN=1 (boot again even if cached),
# DEBIAN_SECONDS (each workload run, default 8), DEBIAN_TIMEOUT (one boot, default 3600 s),
# DEBIAN_MIRROR (debootstrap's mirror, default deb.debian.org/debian).
# Everything heavy runs under `nice -n 19 ionice -c3`.
set -euo pipefail
LAB=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$LAB")
B=$LAB/build/debian
R=$B/root
NICE="nice -n 19 ionice -c3"
KERNELS=${DEBIAN_KERNELS:-6.1 6.12}
SECONDS_RUN=${DEBIAN_SECONDS:-8}
TIMEOUT=${DEBIAN_TIMEOUT:-3600}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
log() { echo "[debian $(date +%H:%M:%S)] $*"; }

deps() { # the host's tools, by package
    local p missing=()
    for p in debootstrap qemu-system-x86 qemu-utils e2fsprogs sqlite3 gcc dpkg-dev xz-utils python3; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt-get install -y -q "${missing[@]}" >/dev/null ||
        { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
}

# What the root holds besides debootstrap's minbase: systemd as PID 1, the tools the checks use
# (curl, sqlite3, Debian's linux-perf), initramfs-tools for the kernels' initrds.
ROOT_PACKAGES=systemd,systemd-sysv,udev,dbus,kmod,procps,iproute2,curl,sqlite3,linux-perf,initramfs-tools,zstd,less
ROOT_KERNELS="linux-image-amd64 linux-image-6.12-amd64"

in_root() { $NICE chroot "$R" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

root() {
    local key
    key=$(echo "$SUITE $MIRROR $ROOT_PACKAGES $ROOT_KERNELS v1" | sha256sum | cut -c1-16)
    if [ -f "$R/.lab-root" ] && [ "$(cat "$R/.lab-root")" = "$key" ]; then
        log "root: cached in $R ($(cat "$R/.lab-kernels" | tr '\n' ' '))"
        return 0
    fi
    rm -rf "$R"; mkdir -p "$B"
    log "root: debootstrap $SUITE (minbase + $ROOT_PACKAGES) into $R (5-15 min)"
    $NICE debootstrap --variant=minbase --include="$ROOT_PACKAGES" "$SUITE" "$R" "$MIRROR" \
        > "$B/debootstrap.log" 2>&1 || { tail -20 "$B/debootstrap.log"; return 1; }
    # bookworm's kernels (6.1 and 6.12) are updated through bookworm-security.
    cat > "$R/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian}/debian-security $SUITE-security main
EOF
    log "root: apt-get install $ROOT_KERNELS (with their initrds)"
    in_root apt-get update -q > "$B/kernels.log" 2>&1
    # initramfs-tools: every module a disk or filesystem may need (virtio_blk, ext4 among them)
    echo "MODULES=most" > "$R/etc/initramfs-tools/conf.d/lab"
    in_root apt-get install -y -q --no-install-recommends $ROOT_KERNELS linux-perf >> "$B/kernels.log" 2>&1 \
        || { tail -20 "$B/kernels.log"; return 1; }
    in_root apt-get clean
    echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$R/etc/fstab"
    echo debian-lab > "$R/etc/hostname"
    printf '127.0.0.1 localhost\n127.0.1.1 debian-lab\n' > "$R/etc/hosts"
    in_root passwd -d root >/dev/null
    ls "$R/boot" | sed -n 's/^vmlinuz-//p' > "$R/.lab-kernels"
    echo "$key" > "$R/.lab-root"
    log "root: kernels $(tr '\n' ' ' < "$R/.lab-kernels")($(du -sh "$R" | cut -f1))"
}

# The packages: `make deb` (DEB_BUILD_OPTIONS=nocheck: the unit suite is `make test`'s), and the
# previous version for the upgrade check: the same package with its version lowered to
# VERSION~prev (dpkg-deb -R, the control file's Version, dpkg-deb -b), so the upgrade runs the
# maintainer scripts and dpkg's conffile handling of a real version change.
deb() {
    local ver arch src
    ver=$(cd "$TOP" && dpkg-parsechangelog -SVersion)
    arch=$(dpkg-architecture -qDEB_HOST_ARCH)
    src=$TOP/mmlockd_${ver}_$arch.deb
    mkdir -p "$B/pkg"
    local stale=
    [ -f "$src" ] && [ "${DEBIAN_DEB:-}" != keep ] &&
        [ -n "$(cd "$TOP" && git ls-files -z daemon plugins schema dist debian web meson.build |
            xargs -0 -I{} find {} -newer "$src" -print -quit)" ] &&
        stale=1 && log "deb: sources newer than $src: rebuilding (DEBIAN_DEB=keep to use it)"
    if [ ! -f "$src" ] || [ -n "$stale" ]; then
        log "deb: make deb (DEB_BUILD_OPTIONS=nocheck; several minutes)"
        (cd "$TOP" && DEB_BUILD_OPTIONS=nocheck $NICE make deb) > "$B/deb.log" 2>&1 || { tail -20 "$B/deb.log"; return 1; }
    fi
    cp "$src" "$B/pkg/mmlockd_cur.deb"
    local x=$B/pkg/prev
    rm -rf "$x"; dpkg-deb -R "$src" "$x"
    sed -i "s/^Version: .*/Version: ${ver}~prev/" "$x/DEBIAN/control"
    dpkg-deb -b --root-owner-group "$x" "$B/pkg/mmlockd_prev.deb" >/dev/null
    rm -rf "$x"
    log "deb: $(dpkg-deb -f "$B/pkg/mmlockd_cur.deb" Version) and $(dpkg-deb -f "$B/pkg/mmlockd_prev.deb" Version) in $B/pkg"
}

# The disk image: the root with the package's dependencies (not the package: the guest installs
# it), labload, a 64 MiB data file, the checks and their unit; a raw ext4 image made with
# mkfs.ext4 -d (no loop device), which each boot uses through its own qcow2 overlay.
image() {
    local deps d key
    deps=$(dpkg-deb -f "$B/pkg/mmlockd_cur.deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | grep . | tr '\n' ' ')
    key=$( { cat "$R/.lab-root" "$B/pkg/mmlockd_cur.deb" "$B/pkg/mmlockd_prev.deb" "$LAB/debian-guest.sh" \
        "$LAB/workloads/labload.c"; echo "$deps"; } | sha256sum | cut -c1-16)
    if [ -f "$B/root.img" ] && [ "$(cat "$B/root.img.key" 2>/dev/null)" = "$key" ]; then
        log "image: cached $B/root.img"
        return 0
    fi
    log "image: the package's dependencies ($deps) into the root"
    in_root apt-get install -y -q --no-install-recommends $deps >> "$B/kernels.log" 2>&1 || { tail -20 "$B/kernels.log"; return 1; }
    in_root apt-get clean
    mkdir -p "$R/opt/lab" "$R/usr/local/bin" "$R/usr/local/sbin"
    cp "$B/pkg/mmlockd_cur.deb" "$B/pkg/mmlockd_prev.deb" "$R/opt/lab/"
    $NICE gcc -static -O2 -Wall -Wextra -pthread -o "$R/usr/local/bin/labload" "$LAB/workloads/labload.c"
    [ -f "$R/var/lib/labdata" ] || head -c $((64 << 20)) /dev/urandom > "$R/var/lib/labdata"
    install -m 0755 "$LAB/debian-guest.sh" "$R/usr/local/sbin/lab-check"
    cat > "$R/etc/systemd/system/lab-check.service" <<'EOF2'
[Unit]
Description=mmlockd Debian guest lab checks (lab/debian-guest.sh)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/lab-check
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=3h

[Install]
WantedBy=multi-user.target
EOF2
    mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
    ln -sf /etc/systemd/system/lab-check.service "$R/etc/systemd/system/multi-user.target.wants/lab-check.service"
    # no login prompt on the console the checks print to
    ln -sf /dev/null "$R/etc/systemd/system/serial-getty@ttyS0.service"
    d=$(du -sm "$R" | cut -f1)
    log "image: mkfs.ext4 -d ($d MiB of files) into $B/root.img"
    rm -f "$B/root.img"
    truncate -s $(( (d + 1536) ))M "$B/root.img"
    $NICE mkfs.ext4 -q -F -L debroot -d "$R" "$B/root.img"
    echo "$key" > "$B/root.img.key"
}

kernel_of() { # LABEL (6.1, 6.12): the root's kernel release of that series
    grep -m1 "^${1//./\\.}[.-]" "$R/.lab-kernels" || { echo "no $1 kernel in the root" >&2; return 1; }
}

boot() { # LABEL
    local k=$1 rel D key start qpid seen=0 lines
    rel=$(kernel_of "$k")
    D=$B/run-$k
    key=$( { cat "$B/root.img.key"; echo "$rel $SECONDS_RUN"; } | sha256sum | cut -c1-16)
    if [ -z "${DEBIAN_RERUN:-}" ] && [ -f "$D/.done" ] && [ "$(cat "$D/.done")" = "$key" ]; then
        log "boot $k: cached results in $D (DEBIAN_RERUN=1 to run again)"
        return 0
    fi
    rm -rf "$D"; mkdir -p "$D"
    qemu-img create -q -f qcow2 -b "$B/root.img" -F raw "$D/root.qcow2"
    truncate -s 512M "$D/out.img"; mkfs.ext4 -q -F -L labout "$D/out.img"
    log "boot $k: $rel under qemu -accel tcg, 2 vCPUs, 2 GiB, systemd as PID 1; timeout ${TIMEOUT}s; console: $D/console.log"
    start=$(date +%s)
    $NICE timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2G \
        -kernel "$R/boot/vmlinuz-$rel" -initrd "$R/boot/initrd.img-$rel" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 loglevel=4 systemd.show_status=0 lab.kernel=$k lab.seconds=$SECONDS_RUN" \
        -drive file="$D/root.qcow2",if=virtio,format=qcow2 -drive file="$D/out.img",if=virtio,format=raw \
        -nic none -display none -monitor none -serial file:"$D/console.log" -no-reboot &
    qpid=$!
    while kill -0 $qpid 2>/dev/null; do
        sleep 5
        # the checks' lines, as journald forwards them to the console ("[ 47.08] lab-check[298]: ")
        lines=$(grep -ao '\[guest .*' "$D/console.log" 2>/dev/null | tail -n +$((seen + 1)) || true)
        if [ -n "$lines" ]; then
            echo "$lines" | sed "s/^/[debian $(date +%H:%M:%S)] $k: /"
            seen=$((seen + $(echo "$lines" | wc -l)))
        fi
    done
    wait $qpid || true
    echo "$(( $(date +%s) - start ))" > "$D/boot_seconds"
    log "boot $k: qemu exited after $(cat "$D/boot_seconds")s"
    rm -rf "$D/out"; mkdir -p "$D/out"
    if ! grep -aq 'LAB-DONE' "$D/console.log"; then
        # What the guest wrote before it died (its journal not replayed: fsck a copy first); the
        # results take the checks it printed but did not sync from the console.
        cp "$D/out.img" "$D/out-fsck.img"; e2fsck -fy "$D/out-fsck.img" >/dev/null 2>&1 || true
        debugfs -R "rdump / $D/out" "$D/out-fsck.img" >/dev/null 2>&1 || true
        rm -f "$D/out-fsck.img"
        grep -a -m1 -E 'Oops|Kernel panic|BUG:' "$D/console.log" > "$D/incomplete" || echo "timeout after ${TIMEOUT}s" > "$D/incomplete"
        log "boot $k: guest did not finish ($(cat "$D/incomplete")); see $D/console.log"
        return 1
    fi
    debugfs -R "rdump / $D/out" "$D/out.img" >/dev/null 2>&1 || true
    rm -f "$D/root.qcow2" "$D/out.img"
    echo "$key" > "$D/.done"
    log "boot $k: $(grep -c '|ok|' "$D/out/checks.txt") ok, $(grep -c '|FAIL|' "$D/out/checks.txt") failed, $(grep -c '|skip|' "$D/out/checks.txt") skipped; results in $D/out"
}

results() {
    log "results: lab/results/debian.md and tests/data/debian-*"
    python3 "$LAB/debian_results.py" --build "$B" --results "$LAB/results" --testdata "$TOP/tests/data" \
        --kernels $KERNELS
}

all() {
    local t0 k
    t0=$(date +%s)
    deps
    log "step 1/5: root (cached; cold ~3-15 min)"
    root
    log "step 2/5: packages"
    deb
    log "step 3/5: image"
    image
    log "step 4/5: boots (one per kernel, all at once: 17-22 min for both under TCG here)"
    local pids=()
    for k in $KERNELS; do boot "$k" & pids+=($!); done
    for k in "${pids[@]}"; do wait "$k" || true; done
    log "step 5/5: results"
    results
    log "done in $(( $(date +%s) - t0 ))s: lab/results/debian.md"
}

main() {
    case ${1:-all} in
        deps) deps ;;
        root) deps; root ;;
        deb) deb ;;
        image) image ;;
        boot) image; boot "${2:?kernel: 6.1 or 6.12}" ;;
        results) results ;;
        all) all ;;
        *) echo "usage: $0 [all|deps|root|deb|image|boot KERNEL|results]" >&2; exit 2 ;;
    esac
}
# one line: bash has read the whole script before it runs (editing it then is safe)
main "$@"; exit
