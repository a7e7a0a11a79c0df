#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets of tests/fuzz/, written at build time.

Usage: make_seeds.py SOURCE_DIR OUT_DIR STAMP

  OUT_DIR/recording, OUT_DIR/replay  the real recordings of tests/data (the lab's .rec.xz too),
      cut down to a fuzzer's size: the magic, every META and STREAM chunk, a run of consecutive
      PROC / RECORD / TICK chunks from the start, the middle and the end, and some SYMBOL chunks.
      Still valid recordings: `mmlockd replay` reads each.
  OUT_DIR/sample  single perf records from those recordings, each prefixed with its stream's
      sample_type (the input layout of fuzz_sample.c), a few per stream.
  OUT_DIR/config, OUT_DIR/route  the files of SOURCE_DIR/seeds/<name>/, copied (route: raw request
      targets, the real requests of the integration suite and http_abuse.py's hostile ones).
The layout of a recording is in daemon/recording.h."""
import hashlib
import lzma
import os
import shutil
import struct
import sys

MAGIC = b"MMLREC01"
META, STREAM, PROC, RECORD, SYMBOL, TICK = 1, 2, 3, 4, 5, 6
RUN = (PROC, RECORD, TICK)


def chunks(data):
    """(type, payload, raw bytes) of every chunk of a recording."""
    off = 8
    while off + 8 <= len(data):
        typ, length = struct.unpack_from("<II", data, off)
        padded = (length + 7) & ~7
        raw = data[off:off + 8 + padded]
        yield typ, data[off + 8:off + 8 + length], raw
        off += 8 + padded


def write(out_dir, blob):
    os.makedirs(out_dir, exist_ok=True)
    name = hashlib.sha1(blob).hexdigest()
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(blob)


def recording_seeds(data, out_dirs, sample_dir):
    head, run, symbols = [], [], []
    types = []
    for typ, payload, raw in chunks(data):
        if typ in (META, STREAM):
            head.append(raw)
            if typ == STREAM:
                types.append(struct.unpack_from("<Q", payload, 8)[0])
        elif typ in RUN:
            run.append((typ, payload, raw))
        elif typ == SYMBOL and len(symbols) < 16:
            symbols.append(raw)
    n = len(run)
    for start, length in ((0, 12), (0, 40), (n // 2, 40), (max(n - 40, 0), 40)):
        part = [raw for _, _, raw in run[start:start + length]]
        blob = MAGIC + b"".join(head) + b"".join(part) + b"".join(symbols)
        for d in out_dirs:
            write(d, blob)
    per_stream = {}
    for typ, payload, _ in run:
        if typ != RECORD or len(payload) < 24:
            continue
        stream = struct.unpack_from("<I", payload, 0)[0]
        if stream >= len(types) or per_stream.get(stream, 0) >= 4:
            continue
        per_stream[stream] = per_stream.get(stream, 0) + 1
        write(sample_dir, struct.pack("<Q", types[stream]) + payload[16:])


def main():
    src, out, stamp = sys.argv[1:4]
    data_dir = os.path.join(src, "..", "data")
    shutil.rmtree(out, ignore_errors=True)
    rec_dirs = [os.path.join(out, "recording"), os.path.join(out, "replay")]
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name.endswith(".rec"):
            with open(path, "rb") as f:
                data = f.read()
        elif name.endswith(".rec.xz"):
            with lzma.open(path) as f:
                data = f.read()
        else:
            continue
        if data[:8] == MAGIC:
            recording_seeds(data, rec_dirs, os.path.join(out, "sample"))
    for name in ("config", "route"):
        shutil.copytree(os.path.join(src, "seeds", name), os.path.join(out, name))
    with open(stamp, "w") as f:
        f.write("seeds in %s\n" % out)


if __name__ == "__main__":
    main()
