#!/bin/bash
# Build one lab kernel (vanilla or patched) from Debian's linux-source-6.12 in lab/build/<flavor>/.
# Cached: a stamp holding the hash of lab/kconfig (+ lab/patches/*.patch for "patched") is written
# after a successful build; if it matches and bzImage exists, nothing is done.
# Usage: lab/kernel.sh vanilla|patched
set -euo pipefail
flavor=${1:?vanilla|patched}
LAB=$(cd "$(dirname "$0")" && pwd)
B=$LAB/build
TARBALL=/usr/src/linux-source-6.12.tar.xz
NICE="nice -n 19 ionice -c3"
log() { echo "[lab $(date +%H:%M:%S)] $*"; }

case $flavor in vanilla|patched) ;; *) echo "unknown flavor $flavor" >&2; exit 2;; esac
inputs=$LAB/kconfig
[ "$flavor" = patched ] && inputs="$inputs $(ls "$LAB"/patches/*.patch)"
want=$(cat $inputs | sha256sum | cut -c1-16)
tree=$B/$flavor
stamp=$tree/.lab-stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$tree/arch/x86/boot/bzImage" ]; then
    log "$flavor kernel cached ($tree/arch/x86/boot/bzImage)"
    exit 0
fi

if [ ! -f "$TARBALL" ]; then
    log "installing linux-source-6.12"
    apt-get install -y -q linux-source-6.12
fi

# A tree whose inputs changed (or a half-extracted one) is thrown away: patches must apply to
# pristine sources. An unchanged tree with a failed build is resumed (incremental).
if [ -f "$tree/.lab-inputs" ] && [ "$(cat "$tree/.lab-inputs")" != "$want" ]; then
    log "$flavor inputs changed: removing old tree"
    rm -rf "$tree"
fi
if [ ! -f "$tree/.lab-extracted" ]; then
    rm -rf "$tree" "$B/linux-source-6.12"
    mkdir -p "$B"
    log "extracting $TARBALL for $flavor (~1 min)"
    $NICE tar -C "$B" -xf "$TARBALL"
    mv "$B/linux-source-6.12" "$tree"
    if [ "$flavor" = patched ]; then
        for p in "$LAB"/patches/*.patch; do
            log "applying $(basename "$p")"
            (cd "$tree" && patch -p1 --forward --batch < "$p")
        done
    fi
    echo "$want" > "$tree/.lab-inputs"
    touch "$tree/.lab-extracted"
fi

cd "$tree"
if [ ! -f .config ] || [ "$(cat .lab-config 2>/dev/null)" != "$want" ]; then
    log "configuring $flavor: tinyconfig + lab/kconfig"
    $NICE make -s ARCH=x86_64 tinyconfig >/dev/null
    grep -E '^CONFIG_' "$LAB/kconfig" | while IFS='=' read -r k v; do
        k=${k#CONFIG_}
        case $v in
            y) scripts/config --enable "$k" ;;
            n) scripts/config --disable "$k" ;;
            *) scripts/config --set-val "$k" "$v" ;;
        esac
    done
    # olddefconfig twice: options whose dependencies were enabled in the first pass settle.
    $NICE make -s ARCH=x86_64 olddefconfig >/dev/null
    grep -E '^CONFIG_' "$LAB/kconfig" | while IFS='=' read -r k v; do
        k=${k#CONFIG_}; [ "$v" = y ] && scripts/config --enable "$k"; true
    done
    $NICE make -s ARCH=x86_64 olddefconfig >/dev/null
    missing=""
    for k in SMP PER_VMA_LOCK PER_VMA_LOCK_STATS VM_EVENT_COUNTERS PERF_EVENTS FTRACE KALLSYMS_ALL \
             EXT4_FS MEMCG SWAP VIRTIO_BLK SERIAL_8250_CONSOLE BLK_DEV_INITRD DEVTMPFS TMPFS UNIX INET \
             BPF_SYSCALL BPF_JIT BPF_EVENTS DEBUG_INFO_BTF TASKSTATS; do
        grep -q "^CONFIG_$k=y" .config || missing="$missing $k"
    done
    for k in LOCKDEP SLUB_TINY CC_OPTIMIZE_FOR_SIZE; do
        grep -q "^CONFIG_$k=y" .config && missing="$missing !$k"
    done
    if [ -n "$missing" ]; then echo "lab: kernel config lacks:$missing" >&2; exit 1; fi
    echo "$want" > .lab-config
fi

log "building $flavor bzImage with -j2 under nice (cold ~25 min with BTF, incremental ~20 s); log: $tree/lab-build.log"
start=$(date +%s)
( $NICE make ARCH=x86_64 -j2 bzImage > lab-build.log 2>&1 ) &
bpid=$!
while kill -0 $bpid 2>/dev/null; do
    sleep 60
    kill -0 $bpid 2>/dev/null && log "  $flavor: $(( $(date +%s) - start ))s, $(grep -c '^  CC' lab-build.log || true) files compiled"
done
if ! wait $bpid; then tail -30 lab-build.log >&2; echo "lab: $flavor build failed" >&2; exit 1; fi
# The BPF source needs the kernel's BTF (/sys/kernel/btf/vmlinux in the guest): pahole (dwarves)
# writes it into vmlinux's .BTF section; a build without a working pahole has none.
# (The section list is read whole first: grep -q exits at its match, and under pipefail the
# SIGPIPE it leaves readelf made a kernel with BTF fail this check, at random.)
sections=$(readelf -S vmlinux)
if ! grep -q '\.BTF ' <<<"$sections"; then
    echo "lab: $flavor vmlinux has no .BTF section (pahole from Debian's dwarves missing or too old?)" >&2
    exit 1
fi
btf_hex=$(readelf -S -W vmlinux | awk '{for (i = 1; i < NF; i++) if ($i == ".BTF") print $(i + 4)}')
log "$flavor kernel built in $(( $(date +%s) - start ))s; BTF: $(( 16#$btf_hex )) bytes"
echo "$want" > "$stamp"
