/* count_check.h — the two rules a GPU row's counted DRAM bytes must pass:
 * the "bytes over time above the device's peak" test that marks its counts
 * untrusted, and counted bytes against the model's (plan rows, kernel rows,
 * the copy sanity gate), as plain C so they run in CPU-only builds and their
 * tests need no GPU. Compiles as C and under nvcc; includes
 * no CUDA header. It does not read counters or time anything: the CUDA
 * backend (cuda_counters.cu) passes its numbers in. */
#ifndef MB_COUNT_CHECK_H
#define MB_COUNT_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* The DRAM bytes that must have crossed the memory bus inside a timed
 * window, from bytes that reach DRAM eventually (counted, or modelled
 * "every write reaches DRAM"): read_bytes + write_bytes less
 * min(write_bytes, cache_bytes), because a timed window ends with up to one
 * last-level cache of the work's dirty lines not yet written back (the
 * counted range's drain sweep writes them back; a timed sample never does);
 * when warm (the timed samples did not flush between samples) also less
 * min(read_bytes, cache_bytes), the inputs the cache may still hold.
 * cache_bytes <= 0 (unknown) subtracts nothing. Never below 0. */
double mb_meas_timed_bytes_floor(double read_bytes, double write_bytes, double cache_bytes, int warm);

/* 1 when mb_meas_timed_bytes_floor(...) / time_s exceeds peak_gbs x (1 +
 * slack) (peak in 1e9 B/s), i.e. the bytes cannot have moved in that time:
 * the timing, the flush or the count is wrong. 0 otherwise, and when
 * time_s, peak_gbs or the bytes are not positive (nothing to compare).
 * *gbs_out (may be NULL) gets the floor's bandwidth in 1e9 B/s, 0 when
 * nothing was compared. */
int mb_meas_above_peak(double read_bytes, double write_bytes, double cache_bytes, int warm, double time_s,
                       double peak_gbs, double slack, double *gbs_out);

/* ---- counted bytes against the model ----------------------------------- */

/* The tolerance of a counted row against the model's cache-aware DRAM bytes
 * (model_dram_read_bytes + model_dram_write_bytes): 3%. The copy sanity
 * gate holds reads and writes each to MB_COUNT_GATE_TOL. */
#define MB_COUNT_TOL 0.03
#define MB_COUNT_GATE_TOL 0.02
/* Judged only where every tensor (n x element size) is at least this many
 * L2s: below, how much of one kernel's output the next finds in L2 depends
 * on the cache's replacement, which the model does not try to capture (its
 * count is all or nothing per tensor), so the row is reported, not judged. */
#define MB_COUNT_JUDGED_L2X 4.0

typedef enum mb_count_verdict {
    MB_COUNT_NOT_COUNTED = 0, /* no counted bytes or no model bytes: "" */
    MB_COUNT_BELOW_L2,        /* tensors under 4x L2 (or L2 unknown): "below 4x L2" */
    MB_COUNT_OK,              /* within the tolerance: "ok" */
    MB_COUNT_OFF              /* outside it: "off" */
} mb_count_verdict;

/* The verdict's text for the CSV's count_check column ("", "below 4x L2",
 * "ok", "off"). */
const char *mb_meas_count_verdict_name(mb_count_verdict v);

/* Counted read + write bytes against the model's: MB_COUNT_OFF when
 * |counted - model| > tol x model + carry_bytes. carry_bytes is what may
 * legitimately cross the range's edge: 0 for a plan row (its range ends with
 * the drain, which writes every dirty line back inside it), one L2 for a
 * kernel's own range (its last dirty lines are written back during the next
 * kernel, which is counted for them). tensor_bytes (n x element size) below
 * MB_COUNT_JUDGED_L2X x cache_bytes, or cache_bytes <= 0: MB_COUNT_BELOW_L2.
 * Negative counted or non-positive model bytes: MB_COUNT_NOT_COUNTED.
 * *err_rel (may be NULL) gets counted / model - 1, NAN when not counted. */
mb_count_verdict mb_meas_count_vs_model(double counted_read, double counted_write, double model_read,
                                        double model_write, double tensor_bytes, double cache_bytes,
                                        double carry_bytes, double tol, double *err_rel);

#ifdef __cplusplus
}
#endif
#endif
