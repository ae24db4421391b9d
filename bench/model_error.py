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

A row whose samples measure found in two modes (time_s_lower_mode,
time_s_upper_mode, upper_mode_share) carries the model's error against each mode,
"(two modes: -20% / +15%, 48% high)": its median is one of them.

Files from several runs (bench/cpu_validate.sh --rounds K) hold the same rows more
than once: each cell is then the median error over the row's runs that count
(quiet, verified, and steady or compared at the host's rates), then their range
and how many runs counted, and the summary counts those medians (a shared host's
drift moves single runs by tens of percent; the median of several is the figure),
then the single runs.

With --membound BIN the model's times are not the CSV's model_time_s but what BIN's
`membound model` gives now for each row, from the device spec and variant text the
CSV carries in its '#' lines: archived measurements against the current model.

With --at-host-rates each row that has both host ratios is compared with the model
at the rates the host had during the row (the model_host_time_s column: the spec's
memory bandwidths times host_copy_ratio, its op rates, peaks and cache bandwidth
times host_op_ratio and its launch overhead over it; with --membound, that spec
modelled again) and counted with the rest, its shares still
shown; a row without the column or the ratios keeps the model column.

usage: bench/model_error.py FILE.csv... [--bound 25] [--sizes 2^18,2^20,...] [--membound BIN]
                            [--at-host-rates]
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile


# a host reference copy more than this far off the calibrated figure (as measure
# warns: MB_MEAS_HOST_DRIFT_MAX)
DRIFT_MAX = 0.2

# the spec's keys mb_device_at_rates scales: memory bandwidths by the copy ratio,
# what the cores do (op rates, peaks, the cache's bandwidth) by the op ratio and
# the launch overhead by its inverse (host_ref_* are the reference, not the model's)
BANDWIDTH_KEYS = re.compile(r"(mem|measured|read)_bandwidth_gbs$")
OP_KEYS = re.compile(r"(fp32_tflops|bf16_tflops|sfu_tops|op_\w+_geps|cache_bandwidth_gbs)$")


def spec_at_rates(lines, bw, op):
    """The INI spec lines with the model's rates scaled (mb_device_at_rates)."""
    out = []
    for line in lines:
        key, eq, value = line.partition("=")
        k = key.strip()
        factor = (bw if BANDWIDTH_KEYS.match(k) else op if OP_KEYS.match(k)
                  else 1 / op if k == "launch_overhead_us" else None)
        if eq and factor is not None:
            line = f"{key}= {float(value) * factor!r}\n"
        out.append(line)
    return out


def parse_n(s):
    s = s.strip()
    if s.startswith("2^"):
        return 1 << int(s[2:])
    return int(s)


def size_label(n):
    k = n.bit_length() - 1
    return f"2^{k}" if n == 1 << k else str(n)


def unescape(field):
    """A text column of membound's CSV (device_spec, variant_text, ...): a
    newline is written as \\n and a backslash as \\\\."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 1 < len(field) and field[i + 1] in "n\\":
            out.append("\n" if field[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def column_comments(rows):
    """The spec and variant texts of a CSV that carries them in columns, as
    the '#' lines older CSVs carried them (what Remodel reads)."""
    out, seen = [], set()
    for r in rows:
        if r.get("device_spec") and not any(c.startswith("# device_spec: ") for c in out):
            out += [f"# device_spec: {line}\n" for line in unescape(r["device_spec"]).split("\n")]
        if r.get("variant_text") and r["variant"] not in seen:
            seen.add(r["variant"])
            text = unescape(r["variant_text"])
            out += [f"# variant_text {r['variant']}: {line}\n" for line in text.rstrip("\n").split("\n")]
        if r.get("variant_expr") and r["variant"] not in seen:
            seen.add(r["variant"])
            out.append(f"# variant_expr {r['variant']}: {unescape(r['variant_expr'])}\n")
    return out


class Remodel:
    """The model's time for rows of one CSV, by `BIN model`, from the spec and
    variant text embedded in the CSV's columns (or, in older CSVs, '#' lines)."""

    def __init__(self, binary, path, comments, tmp):
        self.binary, self.path, self.cache = binary, path, {}
        self.dir = tempfile.mkdtemp(dir=tmp)
        spec = [c[len("# device_spec: "):] for c in comments if c.startswith("# device_spec: ")]
        if not spec:
            raise ValueError("no '# device_spec:' lines or device_spec column (written by membound measure)")
        self.spec_lines = spec
        self.spec = os.path.join(self.dir, "spec.ini")
        with open(self.spec, "w") as f:
            f.writelines(spec)
        self.specs_at = {}
        self.variants = {}
        self.exprs = {}  # --expr strings, by variant name
        for c in comments:
            if c.startswith("# variant_expr "):
                name, _, text = c[len("# variant_expr "):].partition(": ")
                self.exprs[name] = text.rstrip("\n")
            if c.startswith("# variant_text "):
                name, _, text = c[len("# variant_text "):].partition(": ")
                self.variants.setdefault(name, []).append(text)
        for name, lines in self.variants.items():
            vpath = os.path.join(self.dir, name + ".mb")
            with open(vpath, "w") as f:
                f.writelines(lines)
            self.variants[name] = vpath

    def time_s(self, r, rates=None):
        """The model's time for row r, at rates (bandwidth, op) shares of the
        spec's when given."""
        spec = self.spec
        if rates:
            if rates not in self.specs_at:
                path = os.path.join(self.dir, f"spec-{len(self.specs_at)}.ini")
                with open(path, "w") as f:
                    f.writelines(spec_at_rates(self.spec_lines, *rates))
                self.specs_at[rates] = path
            spec = self.specs_at[rates]
        key = (r["variant"], r["plan"], r["n"], r["dtype"], spec)
        if key not in self.cache:
            variant = self.variants.get(r["variant"], r["variant"])
            given = ["--expr", self.exprs[r["variant"]]] if r["variant"] in self.exprs else [variant]
            cmd = [self.binary, "model", *given, "--plan", r["plan"], "--n", r["n"],
                   "--dtype", r["dtype"], "--device", spec, "--csv"]
            got = subprocess.run(cmd, capture_output=True, text=True)
            rows = list(csv.DictReader(io.StringIO(got.stdout))) if got.returncode == 0 else []
            if not rows:
                raise ValueError(f"'{' '.join(cmd)}' failed: {got.stderr.strip()}")
            self.cache[key] = float(rows[0]["time_s"])
        return self.cache[key]


def two_modes(r, model):
    """' (two modes: -20% / +15%, 48% high)': the model's error against each
    mode's median when measure found the row's samples in two modes, else ''."""
    try:
        lo, hi = float(r.get("time_s_lower_mode") or "nan"), float(r.get("time_s_upper_mode") or "nan")
        share = float(r.get("upper_mode_share") or "nan")
    except ValueError:
        return ""
    if not (lo > 0 and hi > 0 and share == share) or model != model:
        return ""
    return (f" (two modes: {100 * (model - lo) / lo:+.0f}% / {100 * (model - hi) / hi:+.0f}%, "
            f"{100 * share:.0f}% high)")


def counts(e):
    """A run of a row that counts: quiet, verified, a number, and steady or
    compared at the host's rates."""
    err, noisy, ok, drift, at_host = e[:5]
    return ok and not noisy and err == err and (drift is None or at_host)


def merged_cell(entries, bound):
    """The cell of a row measured in several runs, and what it counts as:
    (median error, only drifted runs) or None (nothing to count)."""
    m = len(entries)
    use = [e for e in entries if counts(e)]
    drifted = False
    if not use:  # no steady run: the drifted ones, counted apart
        use = [e for e in entries if e[2] and not e[1] and e[0] == e[0]]
        drifted = True
    failed = sum(not e[2] for e in entries)
    mark = "!" if failed else ""
    if not use:
        errs = sorted(e[0] for e in entries if e[0] == e[0])
        med = errs[len(errs) // 2] if errs else float("nan")
        return f"[{med:+.0f}%{mark}]", None
    errs = sorted(e[0] for e in use)
    k = len(errs)
    med = errs[k // 2] if k % 2 else (errs[k // 2 - 1] + errs[k // 2]) / 2
    cell = f"{med:+.0f}%{mark} ({errs[0]:+.0f}..{errs[-1]:+.0f}%, {k} of {m})"
    if drifted:
        cell += " (host drifted in each)"
    return cell, (med, drifted)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--bound", type=float, default=25.0, help="percent (default 25)")
    ap.add_argument("--sizes", default="", help="only these sizes (2^18,2^20,...)")
    ap.add_argument("--membound", default="", help="recompute the model's times with this binary")
    ap.add_argument("--at-host-rates", action="store_true",
                    help="the model at the host's rates during each row (model_host_time_s)")
    a = ap.parse_args()
    tmp = tempfile.TemporaryDirectory() if a.membound else None
    rows = []
    need = {"variant", "plan", "dtype", "n", "reps", "time_s_median", "model_time_s", "verified"}
    for path in a.csv:
        try:
            with open(path, newline="") as f:
                text = f.readlines()
        except OSError as e:
            print(f"model_error.py: error: {path}: {e.strerror}", file=sys.stderr)
            return 2
        got = list(csv.DictReader(line for line in text if not line.startswith("#")))
        if not got or not need <= set(got[0]):
            print(f"model_error.py: error: {path}: not a membound measure CSV (needs {sorted(need)})",
                  file=sys.stderr)
            return 2
        if a.membound:
            try:
                remodel = Remodel(a.membound, path, [t for t in text if t.startswith("#")] + column_comments(got),
                                  tmp.name)
            except ValueError as e:
                print(f"model_error.py: error: {path}: {e}", file=sys.stderr)
                return 2
            for r in got:
                r["_remodel"] = remodel
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
        ratios = tuple(float(r[c]) for c in ("host_copy_ratio", "host_op_ratio") if r.get(c))
        at_host = a.at_host_rates and len(ratios) == 2 and min(ratios) > 0
        if at_host and "_remodel" not in r:
            model = float(r.get("model_host_time_s") or "nan")
            at_host = model == model  # an older CSV: no such column
            if not at_host:
                model = float(r["model_time_s"] or "nan")
        if "_remodel" in r:
            try:
                model = r["_remodel"].time_s(r, ratios if at_host else None)
            except (ValueError, OSError) as e:
                print(f"model_error.py: error: {r['_remodel'].path}: {e}", file=sys.stderr)
                return 2
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
        table.setdefault(key, {}).setdefault(n, []).append(
            (err, noisy, r["verified"] == "1", ", ".join(shares) or None, at_host,
             two_modes(r, model)))
        sizes.add(n)
    sizes = sorted(sizes)
    runs = max(len(m) for cells in table.values() for m in cells.values()) if table else 1
    if runs > 1:
        print(f"Rows measured in up to {runs} runs: each cell is the median error over the runs that "
              f"count (quiet, verified, {'compared at the host' + chr(39) + 's rates' if a.at_host_rates else 'steady'}), "
              "then their range and how many of the row's runs counted.")
        print()
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
            if len(table[key][n]) > 1:
                cell, counted = merged_cell(table[key][n], a.bound)
                cells.append(cell)
                if counted is None:
                    continue
                if counted[1]:  # only drifted runs: counted apart
                    drift_rows += 1
                    drift_within += abs(counted[0]) <= a.bound
                    continue
                quiet += 1
                within += abs(counted[0]) <= a.bound
                if abs(counted[0]) > abs(worst[0]):
                    worst = (counted[0], f"{key[0]} {key[1]} {key[2]} n = {size_label(n)}")
                continue
            err, noisy, ok, drift, at_host, modes = table[key][n][0]
            cell = f"{err:+.0f}%" + modes
            if not ok:
                cell += "!"
            if noisy:
                cells.append(f"[{cell}]")
                continue
            if drift is not None and at_host:
                cell += f" (host {drift})"
            elif drift is not None:
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
    if runs > 1:
        single = [e[0] for cells in table.values() for m in cells.values() for e in m if counts(e)]
        print(f"Medians over runs: {within} of {quiet} rows within {a.bound:g}%"
              + (f"; largest {worst[0]:+.1f}% ({worst[1]})" if worst[1] else "")
              + (f"; {drift_within} of {drift_rows} rows whose every run drifted" if drift_rows else "")
              + f". Single runs: {sum(abs(e) <= a.bound for e in single)} of {len(single)} counted "
              f"rows within {a.bound:g}%.")
        return 0 if within == quiet else 1
    print(f"{within} of {quiet} quiet, {'' if a.at_host_rates else 'steady, '}verified rows within {a.bound:g}%"
          + (", the model at the host's rates during each row (host copy N%, op N%: shares "
             "of the calibrated figures off by more than 20%, counted all the same)"
             if a.at_host_rates else "")
          + (f"; largest error {worst[0]:+.1f}% ({worst[1]})" if worst[1] else "")
          + (f"; {drift_within} of {drift_rows} rows measured while the host drifted more than "
             f"{100 * DRIFT_MAX:.0f}% (host copy N%, op N%: its copy bandwidth and op rate as "
             f"shares of the calibrated)" if drift_rows else "")
          + "; [..] noisy (not counted), ! failed its check")
    return 0 if within == quiet else 1


if __name__ == "__main__":
    sys.exit(main())
