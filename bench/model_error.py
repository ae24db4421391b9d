#!/usr/bin/python3
"""model_error.py — the model against the measurements of `membound measure` CSVs.

Prints a Markdown table, one row per variant and plan, one column per size: the
model's error, (model - measured median) / measured median, in percent. A row the
contention detector marked noisy (more than a fifth of its samples contended) is
shown in brackets and left out of the summary; a row that failed its check, with a
'!'. A row measured while the host's reference copy or op probe ran more than 20%
off the calibrated figure the model assumes (the host_copy_ratio and
host_op_ratio columns: a shared host drifts) carries that share, "(host copy
72%)", and is counted apart: its error says as
much about the host as about the model. Then the summary: steady rows within the
bound (default 25%), the largest error and where it is, and the drifted rows.
Exit 0 when every quiet, steady, verified row is within the bound, 1 when one is
not, 2 on bad usage.

usage: bench/model_error.py FILE.csv... [--bound 25] [--sizes 2^18,2^20,...]
"""
import argparse
import csv
import sys


# a host reference copy more than this far off the calibrated figure (as measure
# warns: MB_MEAS_HOST_DRIFT_MAX)
DRIFT_MAX = 0.2


def parse_n(s):
    s = s.strip()
    if s.startswith("2^"):
        return 1 << int(s[2:])
    return int(s)


def size_label(n):
    k = n.bit_length() - 1
    return f"2^{k}" if n == 1 << k else str(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--bound", type=float, default=25.0, help="percent (default 25)")
    ap.add_argument("--sizes", default="", help="only these sizes (2^18,2^20,...)")
    a = ap.parse_args()
    rows = []
    need = {"variant", "plan", "dtype", "n", "reps", "time_s_median", "model_time_s", "verified"}
    for path in a.csv:
        try:
            with open(path, newline="") as f:
                lines = [line for line in f if not line.startswith("#")]
        except OSError as e:
            print(f"model_error.py: error: {path}: {e.strerror}", file=sys.stderr)
            return 2
        got = list(csv.DictReader(lines))
        if not got or not need <= set(got[0]):
            print(f"model_error.py: error: {path}: not a membound measure CSV (needs {sorted(need)})",
                  file=sys.stderr)
            return 2
        rows += got
    try:
        only = {parse_n(s) for s in a.sizes.split(",") if s.strip()}
    except ValueError:
        print(f"model_error.py: error: --sizes '{a.sizes}': expected 2^K or N, comma-separated",
              file=sys.stderr)
        return 2
    table = {}
    sizes = set()
    for r in rows:
        if r.get("kernel"):
            continue  # a per-kernel file's kernel rows
        n = int(r["n"])
        if only and n not in only:
            continue
        meas, model = float(r["time_s_median"]), float(r["model_time_s"] or "nan")
        reps = int(r["reps"])
        contended = int(r["contended"]) if r.get("contended") else 0
        noisy = contended > 0 and reps > 0 and 5 * contended > reps
        err = 100.0 * (model - meas) / meas if meas > 0 else float("nan")
        shares = []  # the host reference's ratios to the calibration, those off by more than DRIFT_MAX
        for col, what in (("host_copy_ratio", "copy"), ("host_op_ratio", "op")):
            ratio = float(r[col]) if r.get(col) else None
            if ratio is not None and abs(ratio - 1) > DRIFT_MAX:
                shares.append(f"{what} {100 * ratio:.0f}%")
        key = (r["variant"], r["plan"], r["dtype"])
        table.setdefault(key, {})[n] = (err, noisy, r["verified"] == "1", ", ".join(shares) or None)
        sizes.add(n)
    sizes = sorted(sizes)
    print("| variant | plan | dtype | " + " | ".join(size_label(n) for n in sizes) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in sizes) + " |")
    quiet = within = drift_rows = drift_within = 0
    worst = (0.0, None)
    for key in sorted(table):
        cells = []
        for n in sizes:
            if n not in table[key]:
                cells.append("")
                continue
            err, noisy, ok, drift = table[key][n]
            cell = f"{err:+.0f}%"
            if not ok:
                cell += "!"
            if noisy:
                cells.append(f"[{cell}]")
                continue
            if drift is not None:
                cells.append(f"{cell} (host {drift})")
                if ok and err == err:
                    drift_rows += 1
                    drift_within += abs(err) <= a.bound
                continue
            if ok and err == err:
                quiet += 1
                within += abs(err) <= a.bound
                if abs(err) > abs(worst[0]):
                    worst = (err, f"{key[0]} {key[1]} {key[2]} n = {size_label(n)}")
            cells.append(cell)
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    print()
    print(f"{within} of {quiet} quiet, steady, verified rows within {a.bound:g}%"
          + (f"; largest error {worst[0]:+.1f}% ({worst[1]})" if worst[1] else "")
          + (f"; {drift_within} of {drift_rows} rows measured while the host drifted more than "
             f"{100 * DRIFT_MAX:.0f}% (host copy N%, op N%: its copy bandwidth and op rate as "
             f"shares of the calibrated)" if drift_rows else "")
          + "; [..] noisy (not counted), ! failed its check")
    return 0 if within == quiet else 1


if __name__ == "__main__":
    sys.exit(main())
