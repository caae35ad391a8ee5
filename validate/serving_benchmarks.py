"""Runs the serving benchmarks of scenarios/benchmarks/serving-benchmarks.csv (see serving-benchmarks.sh)."""
import argparse
import concurrent.futures
import csv
import json
import math
import os
import statistics
import subprocess
import sys

TABLE = "scenarios/benchmarks/serving-benchmarks.csv"
# Each metric: its name, the table's column, how to read it from results.json's serving object, and
# its part of serving.band (one sigma of ln(simulated / measured)).
METRICS = (("ttft", "ttft_ms", lambda s: s["ttft_s"]["mean"] * 1e3, "ttft"),
           ("tpot", "tpot_ms", lambda s: s["tpot_s"]["mean"] * 1e3, "tpot"),
           ("throughput", "output_tokens_per_s", lambda s: s["throughput"]["output_tokens_per_s"], "output_throughput"))


def rows():
    with open(TABLE) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def run(exe, row, sets):
    args = [exe, "run", f"scenarios/deployments/{row['scenario']}.json", "--json"]
    for s in row["sets"].split() + sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout), None


def layout(scenario):
    with open(f"scenarios/deployments/{scenario}.json") as f:
        p = json.load(f)["parallelism"]
    text = f"DP{p.get('attention_dp', 1)} x TP{p.get('tensor_parallel', 1)}, EP{p.get('expert_parallel', 1)}"
    moe_tp = p.get("moe_tensor_parallel", p.get("tensor_parallel", 1) // p.get("expert_parallel", 1))
    if moe_tp > 1:
        text += f" x MoE TP{moe_tp}"
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    todo = [r for r in rows() if a.only in r["id"]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda r: run(a.exe, r, a.set), todo))
    print("| id | engine release | layout | load | TTFT ms meas / sim (band) | TPOT ms meas / sim (band) | output tok/s meas / sim (band) | TPOT error | throughput error |")
    print("|---|---|---|---|---|---|---|---|---|")
    report = []
    for row, (res, err) in zip(todo, results):
        sets = dict(s.split("=", 1) for s in row["sets"].split())
        load = (f"c{sets['serving.arrivals.concurrency']} x {sets['serving.arrivals.requests']}, "
                f"{sets['serving.arrivals.prompt_tokens']} in / {sets['serving.arrivals.output_tokens']} out")
        if res is None:
            print(f"| `{row['id']}` | {row['release']} | - | {load} | failed: {err} | | | | |")
            report.append({"id": row["id"], "release": row["release"], "error": err})
            continue
        s = res["serving"]
        entry = {"id": row["id"], "release": row["release"], "scenario": row["scenario"], "layout": layout(row["scenario"])}
        cells = []
        for name, col, get, band in METRICS:
            meas = float(row[col])
            sim = get(s)
            sigma = s["band"][band]["sigma"]
            within = abs(math.log(sim / meas)) <= sigma if sim > 0 else False
            entry[name] = {"measured": meas, "simulated": sim, "error": (sim - meas) / meas, "sigma": sigma, "within": within}
            band_range = f"-{(1 - math.exp(-sigma)) * 100:.0f}%/+{(math.exp(sigma) - 1) * 100:.0f}%"
            cells.append((meas, sim, band_range + ("" if within else " out")))
        entry["sessions_per_node_mean"] = s["concurrency"]["sessions_per_node_mean"]
        report.append(entry)
        print(f"| `{row['id']}` | {row['release']} | {entry['layout']} | {load} | {cells[0][0]:.0f} / {cells[0][1]:.0f} ({cells[0][2]}) | "
              f"{cells[1][0]:.1f} / {cells[1][1]:.1f} ({cells[1][2]}) | {cells[2][0]:.0f} / {cells[2][1]:.0f} ({cells[2][2]}) | "
              f"{entry['tpot']['error'] * 100:+.1f}% | {entry['throughput']['error'] * 100:+.1f}% |")
    print()
    releases = sorted({e["release"] for e in report})
    print("| engine release | rows | TPOT median abs error | throughput median abs error | TTFT median abs error | within the band: TTFT, TPOT, throughput |")
    print("|---|---|---|---|---|---|")
    for rel in releases:
        part = [e for e in report if e["release"] == rel and "tpot" in e]
        if not part:
            continue
        med = lambda k: statistics.median(abs(e[k]["error"]) for e in part) * 100
        inside = ", ".join(f"{sum(e[k]['within'] for e in part)}/{len(part)}" for k in ("ttft", "tpot", "throughput"))
        print(f"| {rel} | {len(part)} | {med('tpot'):.1f}% | {med('throughput'):.1f}% | {med('ttft'):.1f}% | {inside} |")
    done = [e for e in report if "tpot" in e]
    if done:
        print()
        print(f"Coverage of the one-sigma band (serving.band: calibration and engine.serving_error_*; nominal 68%) over "
              f"{len(done)} rows: " + ", ".join(f"{label} {100.0 * sum(e[k]['within'] for e in done) / len(done):.0f}%"
                                               for label, k in (("TTFT", "ttft"), ("TPOT", "tpot"), ("throughput", "throughput"))) +
              ". Each release's sigma counts its own rows (left out of the host-time fit, not of the sigma): "
              "validate/fit-engine-host.sh prints the coverage with each row left out of both.")
    failed = [e for e in report if "error" in e and isinstance(e["error"], str)]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
