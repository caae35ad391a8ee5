"""Fits each engine release's host time on the serving benchmarks (see fit-engine-host.sh)."""
import argparse
import concurrent.futures
import itertools
import datetime
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import serving_benchmarks as sb  # noqa: E402

# The fitted engine keys: the step of its finite difference, its unit for printing, and the most
# it may physically be (the key's accepted range: a host-bound step of 100 ms, 1 ms of output
# processing per request, 100 us to launch one kernel from Python): the fit stays inside.
KEYS = (("engine.host_step_time", 0.010, 1e3, "ms", 0.1),
        ("engine.host_request_time", 0.0001, 1e6, "us", 0.001),
        ("engine.eager_launch_time", 0.00003, 1e6, "us", 0.0001))
MIN_ROWS = 4  # a release with fewer rows is not fitted: a constant per row is not a fit
# An engine that overlaps its host time with the GPU (engine.host_overlap) sees it only where it
# exceeds the step's GPU time: not linear. Its releases are fitted on host_request_time alone
# (the fixed part hides behind any step longer than it) over this grid, by real runs.
GRID_REQUEST_TIME = (0.0, 0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.0007, 0.001)


def engine_of(row):
    for s in row["sets"].split():
        if s.startswith("engine="):
            return s.split("=", 1)[1]
    with open(f"scenarios/deployments/{row['scenario']}.json") as f:
        e = json.load(f)["engine"]
    return e if isinstance(e, str) else e["preset"]


def overlaps(row):
    with open(f"scenarios/engines/{engine_of(row)}.json") as f:
        return json.load(f)["host_overlap"]["value"] == "on"


def cost(pairs):
    return sum(((t - mt) / mt) ** 2 + ((thr - mthr) / mthr) ** 2 for (t, thr), (mt, mthr) in pairs)


def targets(entry):
    # TPOT and the node's time per output token (1 / throughput): both grow about linearly with host time.
    return (entry["tpot"], 1.0 / entry["throughput"])


def simulate(exe, row, theta):
    # theta None: the preset's own host time.
    sets = [] if theta is None else [f"{k}={v:.9g}s" for (k, *_), v in zip(KEYS, theta)]
    res, err = sb.run(exe, row, sets)
    if res is None:
        raise RuntimeError(f"{row['id']}: {err}")
    s = res["serving"]
    return s["tpot_s"]["mean"] * 1e3, s["throughput"]["output_tokens_per_s"], s


def solve(A, b):
    # Least squares by the normal equations (at most 3 unknowns), Gaussian elimination.
    n = len(A[0])
    M = [[sum(A[r][i] * A[r][j] for r in range(len(A))) for j in range(n)] for i in range(n)]
    v = [sum(A[r][i] * b[r] for r in range(len(A))) for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(M[r][i]))
        if abs(M[p][i]) < 1e-30:
            return None
        M[i], M[p], v[i], v[p] = M[p], M[i], v[p], v[i]
        for r in range(i + 1, n):
            f = M[r][i] / M[i][i]
            M[r] = [x - f * y for x, y in zip(M[r], M[i])]
            v[r] -= f * v[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(M[i][j] * x[j] for j in range(i + 1, n))) / M[i][i]
    return x


def fit(lin):
    # Box-constrained least squares of the relative errors over the linearised rows: each key free,
    # at 0 or at its bound; the best feasible combination.
    n = len(KEYS)
    best = None
    for states in itertools.product(("free", "zero", "max"), repeat=n):
        fixed = [0.0 if st == "zero" else KEYS[k][4] for k, st in enumerate(states)]
        free = [k for k, st in enumerate(states) if st == "free"]
        A, b = [], []
        for base, slopes, meas in lin:
            for t in range(2):
                shift = sum(slopes[k][t] * fixed[k] for k in range(n) if states[k] != "free")
                A.append([slopes[k][t] / meas[t] for k in free])
                b.append((meas[t] - base[t] - shift) / meas[t])
        x = solve(A, b) if free else []
        if x is None or any(v < 0 or v > KEYS[k][4] for k, v in zip(free, x)):
            continue
        theta = list(fixed)
        for k, v in zip(free, x):
            theta[k] = v
        cost = sum((r - sum(a * t for a, t in zip(row, x))) ** 2 for row, r in zip(A, b))
        if best is None or cost < best[0] - 1e-15:
            best = (cost, theta)
    return best[1]


def linearise(exe, rows, pool):
    zero = [0.0] * len(KEYS)
    jobs = {}
    for r in rows:
        jobs[(r["id"], -1)] = pool.submit(simulate, exe, r, zero)
        for k, (_, step, *_) in enumerate(KEYS):
            theta = list(zero)
            theta[k] = step
            jobs[(r["id"], k)] = pool.submit(simulate, exe, r, theta)
    lin = {}
    for r in rows:
        t0, thr0, _ = jobs[(r["id"], -1)].result()
        base = (t0, 1.0 / thr0)
        slopes = []
        for k, (_, step, *_) in enumerate(KEYS):
            t, thr, _ = jobs[(r["id"], k)].result()
            slopes.append(((t - base[0]) / step, (1.0 / thr - base[1]) / step))
        meas = (float(r["tpot_ms"]), 1.0 / float(r["output_tokens_per_s"]))
        lin[r["id"]] = (base, slopes, meas)
    return lin


# The engine model's own error (engine.serving_error_*): per release, one sigma of ln(simulated /
# measured) = the root mean square over its rows, each simulated with the fit of the release's other
# rows. Releases with fewer than MIN_ROWS rows (and presets with none) get the pool of the fitted
# releases' rows. Coverage is held out twice: a row is within its band when |its error| <= the sigma
# of its release's other rows (or the pool, for an unfitted release) with its calibration band in
# quadrature.
BAND_METRICS = ("ttft", "tpot", "output_throughput")
BAND_KEYS = ("serving_error_ttft", "serving_error_tpot", "serving_error_throughput")


def rms(values):
    values = list(values)
    return (sum(v * v for v in values) / len(values)) ** 0.5 if values else None


def engine_errors(logs, fitted):
    pooled_rows = [x for rel in fitted for x in logs.get(rel, [])]
    pooled = [rms(x["e"][m] for x in pooled_rows) for m in range(3)]
    print()
    print("| engine release | preset | rows | sigma of ln(sim / meas): TTFT, TPOT, throughput | within one sigma, held out: TTFT, TPOT, throughput |")
    print("|---|---|---|---|---|")
    out = {}
    total = [0, 0, 0]
    count = 0
    for rel, part in sorted(logs.items()):
        own = rel in fitted
        sig = [rms(x["e"][m] for x in part) for m in range(3)] if own else pooled
        within = [0, 0, 0]
        for x in part:
            others = [o for o in part if o is not x]
            for m in range(3):
                held = rms(o["e"][m] for o in others) if own else pooled[m]
                if abs(x["e"][m]) <= math.hypot(held, x["cal"][m]):
                    within[m] += 1
        for m in range(3):
            total[m] += within[m]
        count += len(part)
        preset = part[0]["engine"]
        out[preset] = {"release": rel, "rows": len(part), "sigma": sig, "own": own}
        print(f"| {rel} | `{preset}` | {len(part)} | " + ", ".join(f"{v:.3f}" for v in sig) +
              ("" if own else " (pooled: too few rows)") + " | " + ", ".join(f"{w}/{len(part)}" for w in within) + " |")
    print()
    print(f"Held-out coverage of the one-sigma band over {count} rows (nominal 68%): " +
          ", ".join(f"{name} {100.0 * t / count:.0f}%" for name, t in zip(("TTFT", "TPOT", "throughput"), total)) +
          f"; pooled sigma of the {len(pooled_rows)} fitted rows: " + ", ".join(f"{v:.3f}" for v in pooled))
    out[None] = {"rows": len(pooled_rows), "sigma": pooled}
    return out


def write_presets(sigmas):
    today = datetime.date.today().isoformat()
    for name in sorted(os.listdir("scenarios/engines")):
        path = os.path.join("scenarios/engines", name)
        preset = name[:-len(".json")]
        with open(path) as f:
            doc = json.load(f)
        got = sigmas.get(preset)
        for m, key in enumerate(BAND_KEYS):
            if got is not None and got["own"]:
                src = (f"validate/fit-engine-host.sh --write-presets ({today}): root mean square of ln(simulated / measured) "
                       f"over the {got['rows']} serving benchmarks of {got['release']} "
                       "(scenarios/benchmarks/serving-benchmarks.csv), each simulated with the host time fitted on the others")
                value = got["sigma"][m]
            else:
                pool = sigmas[None]
                what = (f"only {got['rows']} serving benchmark(s) of {got['release']}, too few to estimate its own error"
                        if got is not None else "no serving benchmark of this preset's releases")
                src = (f"validate/fit-engine-host.sh --write-presets ({today}): {what}; "
                       f"the pool of the fitted releases' {pool['rows']} rows, each left out of its release's fit (an assumption: "
                       "this release errs as the validated ones do)")
                value = pool["sigma"][m]
            doc[key] = {"value": round(value, 3), "source": src}
        with open(path, "w") as f:
            f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print()
    print("wrote engine.serving_error_* into scenarios/engines/*.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--write-presets", action="store_true",
                    help="write each preset's engine.serving_error_* (the table's sigmas) into scenarios/engines/")
    ap.add_argument("--linearisation", default="", help="a JSON file: read the linearised rows from it if it exists, else write them there")
    a = ap.parse_args()
    rows = sb.rows()
    by_release = {}
    for r in rows:
        by_release.setdefault(r["release"], []).append(r)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs))
    # The linearisation: every row at no host time and at one step of each key.
    if a.linearisation and os.path.exists(a.linearisation):
        with open(a.linearisation) as f:
            lin = {k: tuple(v) for k, v in json.load(f).items()}
    else:
        lin = linearise(a.exe, rows, pool)
        if a.linearisation:
            with open(a.linearisation, "w") as f:
                json.dump(lin, f)
    print("| engine release | rows | " + " | ".join(f"`{k}` ({u})" for k, _, _, u, _ in KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    fits = {}
    grids = {}
    for rel, part in sorted(by_release.items()):
        if len(part) < MIN_ROWS:
            print(f"| {rel} | {len(part)} | " + " | ".join("not fitted" for _ in KEYS) + " |")
            continue
        if overlaps(part[0]):
            runs = {(r["id"], g): pool.submit(simulate, a.exe, r, [0.0, g, 0.0]) for r in part for g in GRID_REQUEST_TIME}
            grids[rel] = {k: f.result()[:2] for k, f in runs.items()}
            meas = {r["id"]: (float(r["tpot_ms"]), float(r["output_tokens_per_s"])) for r in part}
            g = min(GRID_REQUEST_TIME, key=lambda g: cost([(grids[rel][(r["id"], g)], meas[r["id"]]) for r in part]))
            theta = [0.0, g, 0.0]
        else:
            theta = fit([lin[r["id"]] for r in part])
        fits[rel] = theta
        print(f"| {rel} | {len(part)} | " + " | ".join(f"{v * scale:.3g}" for v, (_, _, scale, _, _) in zip(theta, KEYS)) +
              (" (overlapped: host_request_time on a grid)" if rel in grids else "") + " |")
    # Leave one row out: fit on the release's other rows, simulate the row with that fit.
    loo = {}
    for rel, part in by_release.items():
        if rel not in fits:
            continue
        for r in part:
            others = [o for o in part if o["id"] != r["id"]]
            if rel in grids:
                meas = {o["id"]: (float(o["tpot_ms"]), float(o["output_tokens_per_s"])) for o in others}
                g = min(GRID_REQUEST_TIME, key=lambda g: cost([(grids[rel][(o["id"], g)], meas[o["id"]]) for o in others]))
                theta = [0.0, g, 0.0]
            else:
                theta = fit([lin[o["id"]] for o in others])
            loo[r["id"]] = (theta, pool.submit(simulate, a.exe, r, theta), pool.submit(simulate, a.exe, r, fits[rel]))
    # Releases too small to fit run with their preset's own host time: nothing was fitted to them.
    unfitted = {r["id"]: pool.submit(simulate, a.exe, r, None) for r in rows if r["id"] not in loo}
    print()
    print("| id | engine release | TPOT ms meas / fitted / left out | output tok/s meas / fitted / left out | TPOT error left out | throughput error left out |")
    print("|---|---|---|---|---|---|")
    errs = {}
    logs = {}  # release -> per row: ln(simulated / measured) of TTFT, TPOT, throughput left out, and the calibration sigmas
    for r in rows:
        mt, mthr, mttft = float(r["tpot_ms"]), float(r["output_tokens_per_s"]), float(r["ttft_ms"])
        if r["id"] not in loo:
            t, thr, s = unfitted[r["id"]].result()
        else:
            theta, fut_loo, fut_all = loo[r["id"]]
            t, thr, s = fut_loo.result()
            t_all, thr_all, _ = fut_all.result()
            e_t, e_thr = (t - mt) / mt, (thr - mthr) / mthr
            errs.setdefault(r["release"], []).append((e_t, e_thr))
            print(f"| `{r['id']}` | {r['release']} | {mt:.1f} / {t_all:.1f} / {t:.1f} | {mthr:.0f} / {thr_all:.0f} / {thr:.0f} | "
                  f"{e_t * 100:+.1f}% | {e_thr * 100:+.1f}% |")
        band = s["band"]
        logs.setdefault(r["release"], []).append({
            "id": r["id"], "engine": engine_of(r),
            "e": (math.log(s["ttft_s"]["mean"] * 1e3 / mttft), math.log(t / mt), math.log(thr / mthr)),
            "cal": tuple(band[m]["calibration"] for m in BAND_METRICS)})
    print()
    print("| engine release | rows | TPOT median abs error, left out | throughput median abs error, left out | RMS relative error (TPOT, throughput) |")
    print("|---|---|---|---|---|")
    for rel, e in sorted(errs.items()):
        mt = statistics.median(abs(x[0]) for x in e) * 100
        mthr = statistics.median(abs(x[1]) for x in e) * 100
        rms = (sum(x[0] ** 2 for x in e) / len(e)) ** 0.5 * 100, (sum(x[1] ** 2 for x in e) / len(e)) ** 0.5 * 100
        print(f"| {rel} | {len(e)} | {mt:.1f}% | {mthr:.1f}% | {rms[0]:.1f}%, {rms[1]:.1f}% |")
    sigmas = engine_errors(logs, set(fits))
    if a.write_presets:
        write_presets(sigmas)
    pool.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
