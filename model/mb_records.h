/* mb_records.h — the measurement CSV contract: the columns measure/ writes
 * and reports/ and import/ read, in order, and the marks their fields
 * carry. Declares no function: the writers and readers own the code. */
#ifndef MB_RECORDS_H
#define MB_RECORDS_H

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the measurement CSV contract ------------------------------------- */

/* Columns of a measurement CSV (design.md, "Measurement records"), in order,
 * as X(name, required): measure/ writes them, reports/ reads them (required
 * ones must be present), tests use both. Per-kernel files add "kernel". */
#define MB_MEAS_CSV_COLUMNS(X)                                                        \
    X(device, 1) X(backend, 1) X(variant, 1) X(plan, 1) X(dtype, 1) X(n, 1)           \
    X(kernels, 0) X(reps, 0) X(time_s_median, 1) X(time_s_min, 0) X(time_s_p90, 0)   \
    X(time_cv, 0) X(model_time_s, 0) X(read_bytes, 0) X(write_bytes, 0)              \
    X(model_dram_read_bytes, 0) X(model_dram_write_bytes, 0) X(dram_read_bytes, 0)   \
    X(dram_write_bytes, 0) X(counters, 0) X(max_rel_err, 0) X(verified, 1)
#define MB_MEAS_CSV_KERNEL_COLUMN "kernel"
/* After the contract's columns (and "kernel"): timed samples during which the
 * process did not get its cores. A row with more than a fifth of its samples
 * contended is noisy: measure warns, report shows it and does not fit it. */
#define MB_MEAS_CSV_CONTENDED_COLUMN "contended"
/* In long long: 5 x a contended count near INT_MAX overflows int (csv.c clamps
 * the columns to 1e9, and 5e9 does not fit). */
#define MB_MEAS_NOISY(contended, reps) \
    ((contended) > 0 && (reps) > 0 && 5LL * (long long)(contended) > (long long)(reps))
/* Then the host reference timed beside the row's samples (CPU rows measured
 * against a calibrated spec; empty otherwise): its copy bandwidth, that
 * bandwidth's ratio to the calibrated copy bandwidth the model columns
 * assume, and its op rate's (sin, L1-resident) ratio to the calibrated rate.
 * A row with either ratio more than 20% off was measured while the host was
 * not the machine the model describes (a shared host drifts): its model
 * error is off by up to as much. measure warns, report shows it. */
#define MB_MEAS_CSV_HOST_COLUMNS "host_copy_gbs,host_copy_ratio,host_op_ratio"
/* Then the model at the host's rates during the row: the model column's
 * device with its memory bandwidths times host_copy_ratio and what its cores
 * do times host_op_ratio (mb_device_at_rates); empty where a ratio is. A drifted row's model error
 * against this column says what the model got wrong; against model_time_s,
 * what the host and the model did together. */
#define MB_MEAS_CSV_HOST_MODEL_COLUMN "model_host_time_s"
/* Then, when the row's samples fall in two modes (mb_meas_stats), each
 * mode's median and the share of samples in the upper one; empty for one
 * mode. The median is then one mode or the other, and so is its model error:
 * measure warns. */
#define MB_MEAS_CSV_MODES_COLUMNS "time_s_lower_mode,time_s_upper_mode,upper_mode_share"
/* Then, for GPU rows with counted DRAM bytes, the counted bytes against the
 * model's cache-aware ones (measure/count_check.h, mb_meas_count_vs_model):
 * count_err = counted / model - 1, and count_check "ok" (within 3%), "off",
 * or "below 4x L2" (tensors too small to be judged); empty without counts. */
#define MB_MEAS_CSV_COUNT_COLUMNS "count_err,count_check"
/* Then the verdict of the row's checks against the float64 reference: "ok"
 * (within tolerance), "inaccurate" (verified = 1: elements off float64 as
 * far as correct f32 evaluation is, where the input range makes the
 * expression ill-conditioned in f32 or f32 overflows where float64 does
 * not: the math, not the kernel), "failed" (verified = 0), "" unchecked. */
#define MB_MEAS_CSV_ACCURACY_COLUMN "accuracy"
/* The counters column of rows imported from other tools (import/): ncu's
 * counts, each kernel from a flushed cache (ncu --cache-control all, its
 * default: compare them with each kernel's cold count, the traffic rule's),
 * or from the cache as the run left it (--cache-control none); or the
 * PyTorch profiler's kernel times without counts. Their verified = 1 says
 * only that the launches matched the plan: membound checked no output. */
#define MB_MEAS_COUNTERS_NCU "ncu"
#define MB_MEAS_COUNTERS_NCU_WARM "ncu cache-control=none"
#define MB_MEAS_COUNTERS_TORCH "torch-profiler"
#define MB_MEAS_IMPORTED(counters) \
    (!strcmp((counters), MB_MEAS_COUNTERS_NCU) || !strcmp((counters), MB_MEAS_COUNTERS_NCU_WARM) || \
     !strcmp((counters), MB_MEAS_COUNTERS_TORCH))
#define MB_MEAS_HOST_DRIFT_MAX 0.2
#define MB_MEAS_DRIFTED(ratio) ((ratio) > 0 && ((ratio) > 1 + MB_MEAS_HOST_DRIFT_MAX || \
                                                (ratio) < 1 - MB_MEAS_HOST_DRIFT_MAX))
#define MB_MEAS_HOST_DRIFTED(copy_ratio, op_ratio) \
    (MB_MEAS_DRIFTED(copy_ratio) || MB_MEAS_DRIFTED(op_ratio))

/* Last, the texts that make a CSV self-contained (a CSV moved alone still
 * reports): on every row, the text of the row's variant (variant_text: a
 * variant file's; variant_expr: an --expr string; the other one empty), the
 * INI spec of the device the model columns used (device_spec) and the run's
 * provenance (provenance: "key: value" lines: cpu, host, compiler,
 * git_commit, date, settings, backend, model_device, memory; GPU clocks,
 * driver and counters; host_check; one "partial: ..." per row that failed or
 * was not run). Each is one CSV field on the row's line: a newline is
 * written as the two characters \n and a backslash as \\ (carriage
 * returns dropped), then quoted as RFC 4180 says. Before these columns a
 * CSV carried the same texts as '#' lines, "# KEY: line" and
 * "# KEY NAME: line" with the keys below; report reads both forms. */
#define MB_MEAS_PROV_SPEC "device_spec"
#define MB_MEAS_PROV_VARIANT "variant_text"
#define MB_MEAS_PROV_EXPR "variant_expr"
#define MB_MEAS_PROV_LINES "provenance"
/* The provenance line of rows whose counted bytes were judged against each
 * kernel's cold count (ncu --cache-control all flushes the caches before
 * every kernel: import writes it, report draws those rows against the
 * lecture's count, not the cache-aware one). */
#define MB_MEAS_PROV_COLD_KERNELS "count_check: against each kernel's cold count"
#define MB_MEAS_CSV_TEXT_COLUMNS \
    MB_MEAS_PROV_VARIANT "," MB_MEAS_PROV_EXPR "," MB_MEAS_PROV_SPEC "," MB_MEAS_PROV_LINES
/* After the texts: which calibration the row's model columns used (CPU rows
 * against a calibrated spec; empty otherwise): "full" (a calibration that
 * passed every check), "quick" (a smoke test's short one: figures not for
 * the model), "fallback" (not the calibration asked for: a quick one taken
 * after full ones were refused for contention, or the cached one after
 * quick ones were), "stale" (a full one older than MB_CAL_STALE_S). report
 * marks the verdicts of fallback, stale and quick rows. */
#define MB_MEAS_CSV_CALIBRATION_COLUMN "calibration"
#define MB_MEAS_CALIBRATION_MARKS {"full", "quick", "fallback", "stale"}
/* At the very end, after the calibration column: the row's shape, "ROWSxCOLS" for a 2-D row ("" for 1-D);
 * n stays the element count (rows x cols). */
#define MB_MEAS_CSV_SHAPE_COLUMN "shape"
/* After the shape: a variant with named dimensions, the sizes the row ran at
 * ("batch=2,heads=3,seq=5,key=301", mb_graph_dims_text); "" otherwise. A
 * tensor broadcast within the leading dimensions ([batch, 1, 1, seq]) is
 * sized by them, not by rows and cols alone. */
#define MB_MEAS_CSV_DIMS_COLUMN "dims"

#ifdef __cplusplus
}
#endif
#endif
