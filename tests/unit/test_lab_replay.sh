#!/bin/bash
# Replays the kernel lab's recordings (tests/data/lab-<kernel>-<workload>.rec.xz, made by `make lab`
# under qemu on Linux 6.12 vanilla and with the RFC v4 port, CONFIG_PER_VMA_LOCK_STATS=y) and
# checks mmlockd's fault split for the workload process (labload) against the kernel's counters of
# the same run, kept next to each recording in lab-<kernel>-<workload>.expect:
#   rusage_faults, majflt  labload's own getrusage(): exact, per process
#   k_*                    /proc/vmstat deltas over labload's life: system-wide, so they also hold
#                          the recorder's own faults (its perf ring pages fault in on first touch,
#                          and on 6.12 each of those is a vma_lock_retry: perf's VMA has no
#                          ->map_pages, so vmf_can_call_fault() sends it to mmap_lock)
# Checks (see lab/README.md for why each holds):
#   1. faults == rusage_faults (within 0.5%): one page_fault_user per fault
#   2. vanilla: vma_retry == 0
#   3. filemap, vanilla: mmap_retry == majflt (within 1%): every major filemap fault under the VMA
#      lock drops it for the read and returns VM_FAULT_RETRY (k_vma_lock_retry counts it)
#   4. filemap, patched: fallbacks < 5% of majflt: the retry now happens under the VMA lock;
#      and (KNOWN line) vma_retry ~ majflt: the retry maps the page through fault-around, seen
#      as filemap:mm_filemap_map_pages since faults.c took it as the second attempt
#   5. all: vma + vma_retry <= k_vma_lock_success and vma_retry + mmap_retry <= k_vma_lock_retry
#      (the kernel's system-wide counters bound the workload's share)
#   6. swap: a swap-in that waited and retried leaves no event; on vanilla the retry falls back
#      (mmap_retry + mmap_unknown + mmap_abort > 0), on patched it stays under the VMA lock and is
#      counted as vma (vma_retry == 0: mmlockd cannot tell a swap retry under the VMA lock), so
#      the fallbacks must be fewer than 5% of majflt
# KNOWN lines print where the kernel counters and mmlockd disagree for a reason documented in
# lab/README.md; they never fail the test (so a fix to the classifier shows up as "ok").
# Usage: test_lab_replay.sh MMLOCKD DATA_DIR. Exit 77 (skipped) when there are no recordings.
set -u
MMLOCKD=${1:?mmlockd binary}
DATA=${2:?data dir}
command -v xz >/dev/null || { echo "SKIP: xz not installed"; exit 77; }
shopt -s nullglob
recs=("$DATA"/lab-*.rec.xz "$DATA"/debian-*.rec.xz)
[ ${#recs[@]} -gt 0 ] || { echo "SKIP: no lab recordings in $DATA"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # NAME CONDITION(arith) MESSAGE
    if (( $2 )); then echo "  ok   $1: $3"; else echo "  FAIL $1: $3"; fail=1; fi
}
known() { # NAME CONDITION(arith) MESSAGE WHY: what the kernel says and mmlockd does not (yet) see;
          # printed, never failing, so the disagreement stays visible in the test log
    if (( $2 )); then echo "  ok   $1: $3"; else echo "  KNOWN $1: $3 -- $4"; fi
}
# The Debian guest lab's recordings (lab/debian.sh: debian-<kernel>-filemap, Debian's own 6.1 and
# 6.12, CONFIG_PER_VMA_LOCK_STATS off, so no k_* counters; expect has per_vma_lock=y|n):
#   1. faults within 97..100% of rusage_faults: page_fault_user is the user-mode part of getrusage's
#      faults (a 1 s run of ~600 faults has ~12 kernel-mode ones: exec, read buffers)
#   2. per_vma_lock=n (6.1 on x86): vma == 0 and vma_retry == 0: every fault takes mmap_lock there,
#      none may be shown as finished under a per-VMA lock
#   3. per_vma_lock=y, filemap: every major fault drops the VMA lock for the read and retries
#      under mmap_lock: majflt <= mmap_retry <= 1.1 majflt (a minor fault that found the page
#      locked retries too)
debian_checks() {
    check faults "faults <= rf && faults * 100 >= rf * 97" "faults $faults within 97..100% of getrusage $rf"
    if [ "${E[per_vma_lock]}" = n ]; then
        check no-vma "vma + vret == 0" "vma $vma + vma_retry $vret == 0 without a per-VMA lock"
    elif [ "${E[mode]}" = filemap ]; then
        check filemap-retry "mret >= mj && mret * 10 <= mj * 11" "mmap_retry $mret vs majflt $mj (each major fault retries under mmap_lock)"
    fi
}
for rec in "${recs[@]}"; do
    base=${rec%.rec.xz}
    name=$(basename "$base")
    exp=$base.expect
    [ -f "$exp" ] || { echo "FAIL $name: no $exp"; fail=1; continue; }
    declare -A E=()
    while IFS='=' read -r k v; do
        [[ $k =~ ^[a-z_]+$ ]] && E[$k]=$v
    done < "$exp"
    xz -dc "$rec" > "$tmp/r.rec"
    out=$("$MMLOCKD" replay "$tmp/r.rec" --log-level err 2>&1) || { echo "FAIL $name: replay failed"; echo "$out"; fail=1; continue; }
    # pid comm faults vma vma_retry mmap_retry mmap_abort mmap_unknown fallback ...
    row=$(echo "$out" | awk '$2 == "labload" && $3 ~ /^[0-9]+$/ {print; exit}')
    [ -n "$row" ] || { echo "FAIL $name: no labload row"; echo "$out" | head; fail=1; continue; }
    read -r _ _ faults vma vret mret mabort munk _ <<< "$row"
    echo "$name (${E[kernel]}, ${E[mode]}): faults=$faults vma=$vma vma_retry=$vret mmap_retry=$mret mmap_abort=$mabort unknown=$munk"
    if [[ ${E[kernel]} == debian-* ]]; then
        rf=${E[rusage_faults]} mj=${E[majflt]}
        echo "  kernel: ${E[release]}, per-VMA lock ${E[per_vma_lock]}, rusage_faults=$rf majflt=$mj"
        debian_checks
        unset E
        continue
    fi
    echo "  kernel: rusage_faults=${E[rusage_faults]} majflt=${E[majflt]} vma_lock_success=${E[k_vma_lock_success]} retry=${E[k_vma_lock_retry]} abort=${E[k_vma_lock_abort]}"
    rf=${E[rusage_faults]} mj=${E[majflt]}
    d=$((faults - rf)); d=${d#-}
    check faults "d * 200 <= rf" "faults $faults vs getrusage $rf"
    fb=$((mret + mabort + munk))
    if [ "${E[kernel]}" = vanilla ]; then
        check no-vma-retry "vret == 0" "vma_retry $vret == 0 on a vanilla kernel"
    fi
    if [ "${E[mode]}" = filemap ]; then
        if [ "${E[kernel]}" = vanilla ]; then
            d=$((mret - mj)); d=${d#-}
            check filemap-retry "d * 100 <= mj" "mmap_retry $mret vs majflt $mj (each a vma_lock_retry)"
        else
            check filemap-no-fallback "fb * 20 < mj" "fallbacks $fb < 5% of majflt $mj (retries stay under the VMA lock)"
            d=$((vret - mj)); d=${d#-}
            known filemap-vma-retry "d * 100 <= mj" "vma_retry $vret vs majflt $mj (each retried under the VMA lock)" \
                "the retry maps the page by fault-around; mmlockd needs mm_filemap_map_pages in the recording to see it"
        fi
    fi
    if [ "${E[mode]}" = swap ]; then
        if [ "${E[kernel]}" = vanilla ]; then
            check swap-fallback "fb > 0" "swap retries fall back to mmap_lock: $fb"
        else
            check swap-fallback "fb * 20 < mj" "fallbacks $fb < 5% of majflt $mj (retries stay under the VMA lock)"
            known swap-vma-retry "vret > 0" "vma_retry $vret > 0" "a swap retry leaves no event: mmlockd counts it as vma"
        fi
        if [ "${E[kernel]}" = vanilla ]; then
            known swap-mmap-retry "mret >= munk" "mmap_retry $mret vs mmap_unknown $munk" \
                "the kernel counts every one as vma_lock_retry (abort ${E[k_vma_lock_abort]}); mmlockd leaves them unknown by design"
        fi
    fi
    known abort "mabort <= ${E[k_vma_lock_abort]}" "mmap_abort $mabort <= vma_lock_abort ${E[k_vma_lock_abort]}" \
        "a fallback with no visible attempt while another thread held mmap_lock for write is labelled abort, but that writer did not lock this VMA"
    check bound-success "vma + vret <= ${E[k_vma_lock_success]}" "vma+vma_retry $((vma + vret)) <= vma_lock_success ${E[k_vma_lock_success]}"
    check bound-retry "vret + mret <= ${E[k_vma_lock_retry]}" "vma_retry+mmap_retry $((vret + mret)) <= vma_lock_retry ${E[k_vma_lock_retry]}"
    unset E
done
exit $fail
