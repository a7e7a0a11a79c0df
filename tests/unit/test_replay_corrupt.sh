#!/bin/bash
# test_replay_corrupt.sh: `mmlockd replay` on corrupted copies of a real recording ends at once
# with an error naming the offset, never hangs. Each copy of tests/data/anon_mprotect.rec has one
# defect: a record's time stamp set to 2^63 - 1 ns (which once made the window clock close
# empty windows one by one without end), a chunk claiming 4 GiB, a file cut mid-chunk.
#
# Usage: test_replay_corrupt.sh MMLOCKD_BINARY DATA_DIR. Ends with "N passed, M failed".
set -u
MMLOCKD=${1:?mmlockd binary}
DATA=${2:?data dir}
REC=$DATA/anon_mprotect.rec
[ -f "$REC" ] || { echo "SKIP: no $REC"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

# corrupt KIND OUT: writes the defective copy, prints the offset of the chunk it spoiled.
corrupt() {
	python3 - "$REC" "$2" "$1" <<'PY'
import struct, sys
src, out, kind = sys.argv[1:]
b = bytearray(open(src, "rb").read())
off, n = 8, 0
while off < len(b):
    typ, ln = struct.unpack_from("<II", b, off)
    if typ == 4:  # RECORD: u32 stream, u32 pad, u64 time_ns
        n += 1
        if n == 100:
            break
    off += 8 + ((ln + 7) & ~7)
if kind == "time":
    struct.pack_into("<Q", b, off + 16, (1 << 63) - 1)
elif kind == "size":
    struct.pack_into("<I", b, off + 4, 0xfffffff0)
elif kind == "cut":
    b = b[:off + 12]
open(out, "wb").write(b)
print(off)
PY
}

for kind in time size cut; do
	off=$(corrupt "$kind" "$tmp/$kind.rec")
	start=$(date +%s)
	out=$(timeout 20 "$MMLOCKD" replay "$tmp/$kind.rec" 2>&1)
	rc=$?
	took=$(($(date +%s) - start))
	if [ "$rc" = 1 ] && grep -q "corrupt recording at offset $off:" <<<"$out" && [ "$took" -lt 15 ]; then
		echo "PASS: $kind: exit 1 in ${took}s: $(grep corrupt <<<"$out")"
		passed=$((passed + 1))
	else
		echo "FAIL: $kind: exit $rc after ${took}s (124: hung), expected the offset $off in: $out"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
