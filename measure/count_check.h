/* count_check.h — the "bytes over time above the device's peak" test that
 * marks a GPU row's counts untrusted, as plain C so it runs in CPU-only
 * builds and its tests need no GPU. Compiles as C and under nvcc; includes
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

#ifdef __cplusplus
}
#endif
#endif
