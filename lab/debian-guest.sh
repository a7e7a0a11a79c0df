#!/bin/bash
# The checks of the Debian guest lab (lab/debian.sh), run inside a Debian 12 guest by the oneshot
# unit lab-check.service once multi-user.target is up, as /usr/local/sbin/lab-check. Writes every
# output to /out on the second disk (/dev/vdb, ext4, read back by the host with debugfs) and one
# line per check to /out/checks.txt: NAME|ok or FAIL or skip|FIGURE. Prints progress to the
# console as [guest SECONDS] lines. Powers the guest off at the end, whatever happened.
# Kernel command line: lab.kernel=LABEL lab.seconds=S (each workload run).
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive
kernel=unknown seconds=8
for a in $(cat /proc/cmdline); do
    case $a in
    lab.kernel=*) kernel=${a#lab.kernel=} ;;
    lab.seconds=*) seconds=${a#lab.seconds=} ;;
    esac
done
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }
O=/out
DB=/var/lib/mmlockd/mmlockd.db
CUR=/opt/lab/mmlockd_cur.deb
PREV=/opt/lab/mmlockd_prev.deb
API=http://127.0.0.1:9477
finish() {
    journalctl -b --no-pager -o short-monotonic > $O/journal.txt 2>&1
    journalctl -b -k --no-pager > $O/dmesg.txt 2>&1
    sync; umount $O 2>/dev/null
    say "LAB-DONE"
    systemctl poweroff --no-block
}
trap finish EXIT
mkdir -p $O
mount /dev/vdb $O || { say "LAB-FAIL: no output disk"; exit 1; }
: > $O/checks.txt
# check NAME STATUS FIGURE: one line of the results table
check() { echo "$1|$2|$3" >> $O/checks.txt; say "check $1: $2 ($3)"; }
okif() { # NAME FIGURE CONDITION...: ok when the command succeeds
    local n=$1 f=$2; shift 2
    if "$@"; then check "$n" ok "$f"; else check "$n" FAIL "$f"; fi
}
mainpid() { systemctl show -p MainPID --value mmlockd; }
wait_active() { # SECONDS: until mmlockd is active (running) and answers HTTP
    local i=0
    while [ $i -lt $(($1 * 2)) ]; do
        [ "$(systemctl show -p SubState --value mmlockd)" = running ] &&
            curl -sf -o /dev/null $API/api/v1/status && return 0
        sleep 0.5; i=$((i + 1))
    done
    return 1
}
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# --- the guest -------------------------------------------------------------------------------
{
    echo "kernel=$kernel"
    uname -a
    echo "cmdline=$(cat /proc/cmdline)"
    echo "pid1=$(cat /proc/1/comm)"
    echo "systemd=$(systemctl --version | head -1)"
    echo "nproc=$(nproc)"
    grep -E '^(CONFIG_PER_VMA_LOCK|CONFIG_PER_VMA_LOCK_STATS|CONFIG_DEBUG_INFO_BTF|CONFIG_BPF_SYSCALL|CONFIG_MEMCG)[= ]' /boot/config-"$(uname -r)"
    [ -r /sys/kernel/btf/vmlinux ] && echo "btf=$(wc -c < /sys/kernel/btf/vmlinux)" || echo "btf=missing"
    echo "unprivileged_bpf_disabled=$(cat /proc/sys/kernel/unprivileged_bpf_disabled)"
    echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
    for ev in exceptions/page_fault_user mmap_lock/mmap_lock_start_locking \
        mmap_lock/mmap_lock_acquire_returned lock/contention_begin filemap/mm_filemap_fault; do
        [ -d /sys/kernel/tracing/events/$ev ] && echo "tracepoint $ev=yes" || echo "tracepoint $ev=MISSING"
    done
    cat /sys/kernel/tracing/events/mmap_lock/mmap_lock_acquire_returned/format 2>/dev/null | grep field:
    echo "perf=$(perf --version 2>&1)"
    grep -c '' /proc/kallsyms | sed 's/^/kallsyms_lines=/'
    grep -wE 'lock_mm_and_find_vma|lock_vma_under_rcu' /proc/kallsyms | awk '{print "symbol", $3}'
} > $O/env.txt 2>&1
say "$(uname -r), PID 1 $(cat /proc/1/comm), $(nproc) CPUs"
check guest.pid1 "$([ "$(cat /proc/1/comm)" = systemd ] && echo ok || echo FAIL)" "$(cat /proc/1/comm), $(systemctl --version | head -1)"

# --- install ---------------------------------------------------------------------------------
say "install: apt-get install $CUR"
t0=$(now)
timeout 600 apt-get install -y -q $CUR > $O/install.log 2>&1
rc=$?
okif install.apt "apt-get install rc=$rc, $(dpkg-query -W -f '${Version}' mmlockd 2>/dev/null)" [ $rc -eq 0 ]
okif install.enabled "$(systemctl is-enabled mmlockd 2>&1)" [ "$(systemctl is-enabled mmlockd 2>&1)" = enabled ]
wait_active 180
st=$(systemctl show -p ActiveState,SubState,Type,NRestarts mmlockd | tr '\n' ' ')
t1=$(now)
okif install.active "$st; active and answering $(printf '%.1f' "$(sub "$t1" "$t0")") s after apt started" \
    [ "$(systemctl show -p SubState --value mmlockd)" = running ]
systemctl status mmlockd --no-pager > $O/status-after-install.txt 2>&1
# READY: Type=notify, so "running" means the daemon sent READY=1; the journal shows when.
ready=$(systemctl show -p ExecMainStartTimestampMonotonic,ActiveEnterTimestampMonotonic --value mmlockd | tr '\n' ' ')
read -r s a <<< "$ready"
check service.ready "$([ "$a" -gt "$s" ] 2>/dev/null && echo ok || echo FAIL)" \
    "READY $(( (a - s) / 1000 )) ms after exec (Type=notify)"

# --- API -------------------------------------------------------------------------------------
sleep 12   # one window (interval 10)
curl -sf -o $O/status.json $API/api/v1/status; rc1=$?
curl -sf -o $O/metrics.txt $API/metrics; rc2=$?
okif api.status "$(wc -c < $O/status.json 2>/dev/null) bytes, curl rc=$rc1" [ $rc1 -eq 0 ]
okif api.metrics "$(grep -vc '^#' $O/metrics.txt 2>/dev/null) samples, curl rc=$rc2" [ $rc2 -eq 0 ]
curl -sf -o $O/processes.json "$API/api/v1/processes"
# The default collectors under the unit (its capabilities, its sandbox): each one's state.
cs=$(grep -o '"name":"[a-z]*","state":"[a-z]*"' $O/status.json | sed 's/"name":"\([a-z]*\)","state":"\([a-z]*\)"/\1 \2/' | tr '\n' ',' | sed 's/,$//; s/,/, /g')
okif service.collectors "$cs" sh -c "! echo '$cs' | grep -q failed"

# --- reload ----------------------------------------------------------------------------------
say "reload: interval = 5, ring_pages = 512 in /etc/mmlockd.conf"
cp /etc/mmlockd.conf $O/mmlockd.conf.orig
printf 'interval = 5\nring_pages = 512\n' >> /etc/mmlockd.conf
pid=$(mainpid)
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
systemctl reload mmlockd; rc=$?
sleep 8
curl -sf -o $O/status-reload.json $API/api/v1/status
journalctl -u mmlockd --since "$since" --no-pager -o cat > $O/journal-reload.txt
iv=$(grep -o '"interval[a-z_]*": *[0-9.]*' $O/status-reload.json | head -1)
okif service.reload "rc=$rc, same pid $pid=$(mainpid), status $iv; journal: $(grep -ci 'ring_pages' $O/journal-reload.txt) line(s) on ring_pages" \
    [ $rc -eq 0 -a "$pid" = "$(mainpid)" ]

# --- watchdog --------------------------------------------------------------------------------
say "watchdog: kill -STOP $pid (WatchdogSec=$(systemctl show -p WatchdogUSec --value mmlockd))"
since=$(date '+%Y-%m-%d %H:%M:%S')
t0=$(now)
kill -STOP "$pid"
i=0
while [ $i -lt 480 ]; do
    np=$(mainpid)
    [ "$np" != "$pid" ] && [ "$np" != 0 ] && [ "$(systemctl show -p SubState --value mmlockd)" = running ] && break
    sleep 0.5; i=$((i + 1))
done
t1=$(now)
journalctl -u mmlockd --since "$since" --no-pager -o short-monotonic > $O/journal-watchdog.txt
why=$(grep -m1 -o 'Watchdog timeout[^!]*' $O/journal-watchdog.txt)
okif service.watchdog "restarted as pid $(mainpid) $(printf '%.0f' "$(sub "$t1" "$t0")") s after SIGSTOP; journal: ${why:-no watchdog line}; NRestarts=$(systemctl show -p NRestarts --value mmlockd)" \
    [ "$(mainpid)" != "$pid" -a -n "$why" ]
wait_active 120

# --- the history and stop --------------------------------------------------------------------
sleep 12   # two windows of 5 s
say "stop"
t0=$(now)
systemctl stop mmlockd
t1=$(now)
ic=$(sqlite3 $DB 'PRAGMA integrity_check' 2>&1 | tr '\n' ' ')
last=$(sqlite3 $DB 'SELECT max(ts_end) FROM windows' 2>&1)
nwin=$(sqlite3 $DB 'SELECT count(*) FROM windows' 2>&1)
d=$(sub "$t0" "$last")
okif service.stop "stop took $(printf '%.2f' "$(sub "$t1" "$t0")") s; integrity_check: $ic; last window end $(printf '%.3f' "$d") s before the stop; $nwin windows" \
    sh -c "[ '$ic' = 'ok ' ] && echo '$d' | awk '{exit !(\$1 > -1 && \$1 < 1)}'"
echo "stop=$t0 stopped=$t1 last_window_end=$last" > $O/stop.txt

# --- the sandbox, the journal ----------------------------------------------------------------
journalctl -u mmlockd -b --no-pager -o json > $O/journal-mmlockd.json
journalctl -u mmlockd -b --no-pager -p warning -o cat > $O/journal-warnings.txt
# A denial: the daemon's own words for EPERM/EACCES (but "no Landlock in this kernel", which is
# the kernel's lack, not the sandbox's refusal), seccomp or AppArmor audit records in the kernel log.
{
    journalctl -u mmlockd -b --no-pager -o cat | grep -iE 'denied|not permitted|EPERM|EACCES' | grep -v 'no Landlock in this kernel'
    journalctl -k -b --no-pager -o cat | grep -E 'type=1326|type=1400|apparmor="DENIED"'
} > $O/denials.txt
den=$(wc -l < $O/denials.txt)
okif sandbox.denials "$den denial line(s) (mmlockd's EPERM/EACCES, seccomp/AppArmor audit in the kernel log): $(sort $O/denials.txt | uniq -c | sort -rn | head -1 | cut -c1-160); $(wc -l < $O/journal-warnings.txt) warning-or-worse lines from mmlockd" [ "$den" -eq 0 ]
sec=$(systemd-analyze security mmlockd --no-pager 2>&1 | tee $O/security.txt | tail -1)
check service.security ok "$sec"
mmlockd report --db $DB > $O/report.txt 2>&1; rc=$?
okif report.history "rc=$rc, $(wc -l < $O/report.txt) lines" [ $rc -eq 0 ]
cp $DB $O/service.db 2>/dev/null

# --- the numbers -----------------------------------------------------------------------------
# labload (lab/workloads/labload.c) in a 16 MiB memory scope, under mmlockd on one source with
# every collector (4096 ring pages per event per CPU, as in the kernel lab: the default 256 lost
# 4121 events on 6.12 under TCG), and under `perf stat` of the same tracepoints for labload alone.
# minor-faults and major-faults (perf's software events, every fault like getrusage) tell the
# faults perf stat cannot see: those of its child between fork and exec (enable_on_exec).
PERF_EV="-e minor-faults -e major-faults -e exceptions:page_fault_user -e mmap_lock:mmap_lock_acquire_returned --filter write==0&&success==1 -e mmap_lock:mmap_lock_acquire_returned --filter write==1 -e mmap_lock:mmap_lock_start_locking --filter write==0 -e mmap_lock:mmap_lock_acquire_returned --filter success==0"
runload() { # NAME: labload under perf stat in a memory scope
    sync; echo 3 > /proc/sys/vm/drop_caches
    # shellcheck disable=SC2086
    perf stat -x, -o $O/$1.perfstat $PERF_EV -- \
        systemd-run --scope --quiet -p MemoryMax=16M -p MemorySwapMax=0 \
        /usr/local/bin/labload --mode filemap --file /var/lib/labdata --threads 4 --writers 1 \
        --size-mb 64 --seconds "$seconds" --warmup 1 > $O/$1.out 2>&1
}
for src in perf bpf; do
    say "numbers: mmlockd --source $src --collectors all, labload filemap"
    rm -f /tmp/n.db*
    # debug: libbpf's own lines, where the BPF programs do not load
    mmlockd --config /dev/null --db /tmp/n.db --source $src --collectors all --interval 1 --ring-pages 4096 \
        --log-level "$([ $src = bpf ] && echo debug || echo info)" > $O/numbers-$src.log 2>&1 &
    mp=$!
    i=0
    until curl -sf -o /dev/null $API/api/v1/status || [ $i -ge 720 ]; do sleep 0.5; i=$((i + 1)); done
    if ! kill -0 $mp 2>/dev/null; then
        check numbers.$src.load skip "mmlockd --source $src did not start: $(tail -1 $O/numbers-$src.log)"
        continue
    fi
    curl -sf -o $O/numbers-$src.status.json $API/api/v1/status
    sleep 1
    runload numbers-$src
    sleep 3
    curl -sf -o $O/numbers-$src.processes.json $API/api/v1/processes
    curl -sf -o $O/numbers-$src.metrics.txt $API/metrics
    kill -TERM $mp; wait $mp
    cp /tmp/n.db $O/numbers-$src.db
    mmlockd report --db $O/numbers-$src.db > $O/numbers-$src.report.txt 2>&1
    check numbers.$src.ran ok "$(grep '^result' $O/numbers-$src.out | cut -c1-120)"
done
say "record: mmlockd record of labload (1 s)"
sync; echo 3 > /proc/sys/vm/drop_caches
timeout 300 mmlockd record -o $O/filemap.rec --log-level warning -- \
    systemd-run --scope --quiet -p MemoryMax=16M -p MemorySwapMax=0 \
    /usr/local/bin/labload --mode filemap --file /var/lib/labdata --threads 4 --writers 1 \
    --size-mb 64 --seconds 1 --warmup 0 > $O/record.out 2>&1
okif numbers.record "rc=$?, $(wc -c < $O/filemap.rec 2>/dev/null) bytes" [ -s $O/filemap.rec ]

# --- purge, then upgrade from the previous version -------------------------------------------
say "purge"
timeout 600 apt-get purge -y -q mmlockd > $O/purge.log 2>&1; rc=$?
left=$(ls -d /var/lib/mmlockd /etc/mmlockd.conf /lib/systemd/system/mmlockd.service \
    /etc/systemd/system/multi-user.target.wants/mmlockd.service 2>/dev/null | tr '\n' ' ')
okif package.purge "rc=$rc; left: ${left:-nothing}" [ $rc -eq 0 -a -z "$left" ]

say "upgrade: $(dpkg-deb -f $PREV Version) then $(dpkg-deb -f $CUR Version)"
timeout 600 apt-get install -y -q $PREV > $O/upgrade-prev.log 2>&1; rc=$?
wait_active 180
sleep 22   # two windows (interval 10)
echo 'retention = 14' >> /etc/mmlockd.conf
systemctl reload mmlockd
sleep 2
w0=$(sqlite3 $DB 'SELECT count(*) FROM windows'); v0=$(sqlite3 $DB 'PRAGMA user_version')
p0=$(mainpid)
timeout 600 apt-get install -y -q $CUR > $O/upgrade.log 2>&1 < /dev/null; rc2=$?
wait_active 180
sleep 12
w1=$(sqlite3 $DB 'SELECT count(*) FROM windows'); v1=$(sqlite3 $DB 'PRAGMA user_version')
p1=$(mainpid)
okif package.upgrade "prev rc=$rc, upgrade rc=$rc2, now $(dpkg-query -W -f '${Version}' mmlockd)" [ $rc -eq 0 -a $rc2 -eq 0 ]
okif upgrade.history "windows $w0 before, $w1 after; user_version $v0 -> $v1" [ "$w1" -gt "$w0" ]
okif upgrade.conffile "$(grep -c '^retention = 14' /etc/mmlockd.conf) local edit(s) kept" grep -q '^retention = 14' /etc/mmlockd.conf
okif upgrade.enabled "$(systemctl is-enabled mmlockd)" [ "$(systemctl is-enabled mmlockd)" = enabled ]
okif upgrade.restarted "pid $p0 -> $p1, $(systemctl show -p SubState --value mmlockd)" [ "$p0" != "$p1" -a "$(systemctl show -p SubState --value mmlockd)" = running ]
journalctl -u mmlockd -b --no-pager -o cat | grep -iE 'schema|migrat' > $O/upgrade-schema.txt
systemctl stop mmlockd
say "checks done: $(grep -c '|ok|' $O/checks.txt) ok, $(grep -c '|FAIL|' $O/checks.txt) failed, $(grep -c '|skip|' $O/checks.txt) skipped"
