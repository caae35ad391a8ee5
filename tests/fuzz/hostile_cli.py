#!/usr/bin/env python3
"""Hostile and careless inputs for the simulator's own readers, run through the real binary.

    python3 tests/fuzz/hostile_cli.py BUILD/ess-sim [--seed 1] [--count 300] [--out DIR]

Covers the scenario loader (check and run), --set overrides, the command line itself and replay
traces (the validate and calibrate readers have their own campaigns and libFuzzer targets). Each
input says what it must give: "bad" (exit 2, a message, nothing on stdout), "ok" (exit 0), or "any"
(0 or 2). Each run is classified as ok, crash (a signal, exit 134, a sanitizer report), hang (over
20 s), memory (over the 6 GB address-space limit the script sets), exit 3 (an internal error for
plain bad input) or silent (exit 0 on bad input, or a run that printed a zero or non-finite step
time). Prints one line per reader and exits 1 if anything is not ok. Not part of the test suite: it
takes minutes; the regression tests pin each finding it made.
"""
import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS = [os.path.join(ROOT, "scenarios", n) for n in
             ("dsv32-baseline-32k.json", "dsv32-ess-32k.json", "llama2-7b-a100-decode.json")]
TIMEOUT = 20
MEMORY = 6 << 30


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def classify(binary, args, expect):
    try:
        p = subprocess.run([binary] + args, capture_output=True, timeout=TIMEOUT, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return "hang"
    err = p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode == 134 or "AddressSanitizer" in err or "runtime error:" in err:
        return "crash"
    if "bad_alloc" in err or "std::length_error" in err:
        return "memory"
    if p.returncode == 3:
        return "exit 3"
    if p.returncode not in (0, 2):
        return "crash"
    if p.returncode == 2 and out:
        return "exit 3"  # an error must not leave output behind
    if p.returncode == 0:
        if expect == "bad":
            return "silent"
        # A run's summary table: a zero or non-finite step time or throughput is garbage.
        if args[0] == "run" and ("mean 0.000 ms" in out or " inf " in out or "nan" in out or "-nan" in out):
            return "silent"
    if p.returncode == 2 and expect == "ok":
        return "exit 2 on good input"
    return "ok"


def random_value(rng):
    values = [None, True, False, 0, 1, -1, 2, 7, 64, 1000, 65536, 1.5, -0.5, 1e300, 1e-300, 2147483649,
              4294967298, 9223372036854775807, 18446744073709551615, "", "x", "max", "offload", "55GB",
              "55GB/s", "-1GB/s", "0GB/s", "1e-300B/s", "1e300s", "1.5us", "989TFLOP/s", "90%", "1e999GB",
              "h200-sxm", "a100-80gb-sxm", "h20", "deepseek-v3.2-exp", "llama-2-7b", [], [1, 2], {},
              {"value": 1}, {"preset": "h20"}, 1e-308, "replay", "heat", "dba", "copy"]
    return rng.choice(values)


def pointers(doc, prefix=""):
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = prefix + "/" + k
            out.append(p)
            out.extend(pointers(v, p))
    return out


def set_pointer(doc, pointer, value):
    keys = pointer.strip("/").split("/")
    cur = doc
    for k in keys[:-1]:
        cur = cur[k]
    cur[keys[-1]] = value


def resolved(binary, scenario):
    p = subprocess.run([binary, "check", scenario], capture_output=True, timeout=TIMEOUT)
    return json.loads(p.stdout)


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def replay_trace(layers, requests, top_k, steps):
    """A valid ESS-TOPK v1 file (sim/offload/access_trace.h): each request selects positions 0..k-1."""
    b = b"ESS-TOPK" + struct.pack("<IIIII", 1, layers, requests, top_k, len(steps))
    for step, ctx in steps:
        b += varint(step * 2 if step >= 0 else -step * 2 - 1) + varint(ctx)
        count = min(top_k, ctx)
        for layer in range(layers):
            for request in range(requests):
                b += varint(layer) + varint(request) + varint(count) + varint(0) + varint(1) * (count - 1)
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300, help="random scenario mutations")
    ap.add_argument("--out", default=None, help="keep the generated files here")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = a.out or tempfile.mkdtemp(prefix="ess-hostile-")
    os.makedirs(work, exist_ok=True)
    cases = []  # (reader, label, args, expect)

    def write(name, data):
        path = os.path.join(work, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    base = SCENARIOS[0]
    # --- scenario loader: random mutations of the bundled scenarios and of their resolved form ---
    docs = [json.load(open(s)) for s in SCENARIOS] + [resolved(a.binary, s) for s in SCENARIOS]
    for i in range(a.count):
        doc = json.loads(json.dumps(rng.choice(docs)))
        for _ in range(rng.randint(1, 3)):
            ps = pointers(doc)
            if ps:
                set_pointer(doc, rng.choice(ps), random_value(rng))
        path = write("mut%d.json" % i, json.dumps(doc))
        cases.append(("scenario", "mutation %d" % i, ["check", path], "any"))
        if i % 5 == 0:
            cases.append(("scenario", "mutation %d run" % i, ["run", path, "--steps", "1"], "any"))
    # Deep nesting inside a section that overrides a preset, and in arrays.
    deep = '{"a":' * 100000 + "1" + "}" * 100000
    cases.append(("scenario", "100k nested objects", ["check", write("deep-objects.json",
                  '{"model": {"preset": "llama-2-7b", "x": %s}, "hardware": "h200-sxm", "workload": {}}' % deep)], "bad"))
    cases.append(("scenario", "1M nested arrays", ["check", write("deep-arrays.json",
                  '{"model": ' + "[" * 1000000 + "]" * 1000000 + "}")], "bad"))
    cases.append(("scenario", "1e400", ["check", write("big-number.json", '{"seed": 1e400}')], "bad"))
    cases.append(("scenario", "binary junk", ["check", write("junk.json", bytes(rng.randrange(256) for _ in range(4096)))], "bad"))
    cases.append(("scenario", "truncated", ["check", write("truncated.json", open(base).read()[:200])], "bad"))
    cases.append(("scenario", "non-UTF-8 path", ["check", write("bad\xff.json".encode("latin-1").decode("utf-8", "surrogateescape"),
                  open(base).read())], "ok"))
    for name, path in (("/dev/zero", "/dev/zero"), ("a directory", work)):
        cases.append(("scenario", name, ["check", path], "bad"))
    fifo = os.path.join(work, "fifo.json")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    cases.append(("scenario", "a FIFO", ["check", fifo], "bad"))
    # Values inside the old documented ranges that overflowed the simulated clock, and ordinary
    # actions that aborted inside the simulation.
    for s in ("hardware.kernels.gemm.compute_efficiency=1e-308", "hardware.kernels.gemm.kernel_overhead=1e300s",
              "hardware.gpu.hbm_bandwidth=1e-300B/s", "hardware.nvlink.bandwidth=1e-300B/s",
              "hardware.pcie.h2d_bandwidth=1e-300B/s", "hardware.kernels.attention.memory_efficiency=1e-300",
              "hardware.network.latency=1e300s", "hardware.nvlink.bandwidth=1e-300B/s"):
        cases.append(("scenario", s, ["run", base, "--steps", "1", "--set", s], "bad"))
    cases.append(("scenario", "DeepSeek on A100", ["run", base, "--steps", "1", "--set", "hardware=a100-80gb-sxm", "--set",
                  "hardware.nodes=4", "--set", "parallelism.attention_dp=32", "--set", "parallelism.expert_parallel=32"], "bad"))
    cases.append(("scenario", "no bf16 peak", ["run", SCENARIOS[2], "--steps", "1", "--set",
                  "hardware.gpu.peak_compute.bf16=null", "--set", "hardware.gpu.peak_compute.fp16=null"], "bad"))
    # Resource bounds.
    cases.append(("resources", "4096 x 8 GPUs", ["run", base, "--steps", "1", "--set", "hardware.nodes=4096", "--set",
                  "parallelism.attention_dp=32768", "--set", "parallelism.expert_parallel=256", "--set",
                  "workload.batch_per_gpu=1"], "bad"))
    ess128 = os.path.join(ROOT, "scenarios", "dsv32-ess-128k.json")
    cases.append(("resources", "4096 sampled requests at 128K", ["run", ess128, "--steps", "1", "--set",
                  "cache.sampled_requests=4096"], "bad"))
    cases.append(("resources", "4096 warm-up windows", ["run", ess128, "--steps", "1", "--set", "cache.warmup_windows=4096"], "bad"))
    cases.append(("resources", "1000 traced steps", ["run", base, "--steps", "1000", "--trace-steps", "1000", "-o",
                  os.path.join(work, "out-trace")], "bad"))
    # --set and the command line.
    for s in ("name=\xff", "na\xc3me=1", "model=" + '{"a":' * 10000 + "1" + "}" * 10000,
              'model={"preset": "a", "preset": "b"}', "workload.context_length=1e400", "=1", "a..b=1", "x"):
        arg = s.encode("latin-1", "replace").decode("utf-8", "surrogateescape") if "\xff" in s or "\xc3" in s else s
        cases.append(("--set", repr(s[:40]), ["check", base, "--set", arg], "bad"))
    for i in range(60):
        pointer = rng.choice(pointers(docs[3]))
        v = random_value(rng)
        cases.append(("--set", "random %d" % i, ["check", base, "--set", pointer.strip("/").replace("/", ".") + "=" +
                      (json.dumps(v) if not isinstance(v, str) or rng.random() < 0.5 else v)], "any"))
    for args in (["sweep", "--help"], ["swep"], ["run"], ["run", base, "--steps", "0"], ["run", base, "--steps", "-1"],
                 ["cost", "gemm", "--hardware", "h200-sxm", "--m", "-1", "--n", "1", "--k", "1"]):
        cases.append(("command line", " ".join(args[:3]), args, "bad"))
    # Replay traces: a valid small trace for an offload scenario, then byte mutations of it.
    ess32 = os.path.join(ROOT, "scenarios", "dsv32-ess-32k.json")
    layers, top_k = 62, 2048
    tiny = ["--set", "workload.context_length=4096", "--set", "cache.sampled_requests=1", "--set",
            "cache.warmup_windows=0", "--set", "cache.access.model=replay"]
    good = replay_trace(layers, 1, top_k, [(0, 4096), (1, 4097)])
    cases.append(("replay", "valid", ["run", ess32, "--steps", "2", "--set", "cache.access.file=" +
                  write("good.trace", good)] + tiny, "ok"))
    cases.append(("replay", "a directory", ["run", ess32, "--steps", "1", "--set", "cache.access.file=" + work] + tiny, "bad"))
    cases.append(("replay", "fewer steps than the run", ["run", ess32, "--steps", "4", "--set", "cache.access.file=" +
                  write("short.trace", good)] + tiny, "bad"))
    cases.append(("replay", "another context", ["run", ess32, "--steps", "1", "--set", "cache.access.file=" +
                  write("other-context.trace", replay_trace(layers, 1, top_k, [(0, 8192)]))] + tiny, "bad"))
    for i in range(40):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        cases.append(("replay", "mutation %d" % i, ["check", ess32, "--set", "cache.access.file=" +
                      write("mut%d.trace" % i, bytes(data))] + tiny, "any"))

    tally = {}
    bad = []
    for reader, label, args, expect in cases:
        outcome = classify(a.binary, args, expect)
        t = tally.setdefault(reader, {})
        t[outcome] = t.get(outcome, 0) + 1
        if outcome != "ok":
            bad.append((reader, label, outcome))
    kinds = ["crash", "hang", "memory", "exit 3", "silent", "exit 2 on good input"]
    print("%-14s %6s  %s" % ("reader", "inputs", "  ".join("%s" % k for k in kinds)))
    for reader, t in tally.items():
        print("%-14s %6d  %s" % (reader, sum(t.values()), "  ".join("%*d" % (len(k), t.get(k, 0)) for k in kinds)))
    for reader, label, outcome in bad:
        print("  %s: %s: %s" % (reader, label, outcome))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
