/* dram.c — the cache-aware DRAM bytes of a plan from a cold start: which
 * reads the last-level cache serves, a write-allocate cache's line fills and
 * pending write-backs, a multi-pass row kernel's re-reads (the rule and its
 * figures: traffic.c's header). Does not count the lecture's bytes
 * (traffic.c) or time (roofline.c). */
#include "model_int.h"

#include <math.h>
#include <stdlib.h>

/* The share of tensor t (size bytes) a cache of cache_bytes still holds: 1
 * when it was touched before (trace[last[t]]) and the distinct bytes
 * touched since, plus those kernel K (when not NULL) streams beside it,
 * plus its own, fit (the reuse distance D <= the cache); beyond the cache
 * min(1, retained_bytes / D) (cache_retained_mb, fitted by calibrate: 0
 * on a spec without it, a step); 0 for a first touch. */
static double resident(const mb_graph *g, const mb_kernel *K, int t, int64_t size, mb_shape n,
                       const int *last, const int *trace, int n_trace, int *stamp, int *cur_stamp,
                       double cache_bytes, double retained_bytes)
{
    if (last[t] < 0) return 0;
    ++*cur_stamp;
    stamp[t] = *cur_stamp;
    double dist = 0;
    /* walks the whole distance only when a share beyond the cache counts */
    double stop = retained_bytes > 0 ? INFINITY : cache_bytes;
    for (int e = last[t] + 1; e < n_trace && dist + (double)size <= stop; e++)
        if (stamp[trace[e]] != *cur_stamp) {
            stamp[trace[e]] = *cur_stamp;
            dist += (double)mb_tensor_bytes_at(g, trace[e], n);
        }
    for (int o = 0; K && o < K->n_reads + K->n_writes; o++) {
        int u = o < K->n_reads ? K->reads[o] : K->writes[o - K->n_reads];
        if (stamp[u] != *cur_stamp) {
            stamp[u] = *cur_stamp;
            dist += (double)mb_tensor_bytes_at(g, u, n);
        }
    }
    return mb_cache_share(dist + (double)size, cache_bytes, retained_bytes);
}

double mb_cache_share(double reuse_bytes, double cache_bytes, double retained_bytes)
{
    if (reuse_bytes <= cache_bytes) return 1;
    if (!(retained_bytes > 0)) return 0;
    return fmin(1, retained_bytes / reuse_bytes);
}

int64_t mb_device_rows_in_flight(const mb_device *d, int64_t rows)
{
    return mb_device_rows_in_flight_at(d, rows, MB_ROW_BLOCK_THREADS);
}

int64_t mb_device_rows_in_flight_at(const mb_device *d, int64_t rows, int threads)
{
    double per_sm = floor(d->max_threads_per_sm / threads); /* row blocks an SM holds */
    if (!(per_sm >= 1)) per_sm = 1;
    double n = (d->sm_count >= 1 ? floor(d->sm_count) : 1) * per_sm;
    if (n > (double)rows) n = (double)rows;
    return n >= 1 ? (int64_t)n : 1;
}

int64_t mb_device_partial_blocks(const mb_device *d, int64_t rows)
{
    double n = d->sm_count >= 1 ? floor(d->sm_count) : 1;
    if (n > (double)rows) n = (double)rows;
    return n >= 1 ? (int64_t)n : 1;
}

/* The re-reads of a row kernel K that does not fit on chip (c->passes > 1,
 * counted by traffic.c) reach DRAM unless the rows in flight
 * (mb_device_rows_in_flight) of everything K streams fit the cache. Rows of
 * up to 1024 columns run a warp a row (8 rows a block), but on every GPU of
 * the table such rows are one pass. */
static void extra_passes(const mb_graph *g, const mb_kernel *K, mb_shape s, const mb_device *d, mb_framework fw,
                         double cache_bytes, mb_cost *c)
{
    if (c->passes <= 1) return;
    const int torch_norm = mb_kernel_reread_rows(K, d, fw);
    double row_bytes = 0;
    for (int o = 0; o < K->n_reads + K->n_writes; o++) {
        int u = o < K->n_reads ? K->reads[o] : K->writes[o - K->n_reads];
        if (g->nodes[u].shape == MB_SHC_FULL) row_bytes += (double)s.cols * (double)mb_dtype_bytes(g->nodes[u].dtype);
    }
    c->rows_in_flight = torch_norm ? mb_device_rows_in_flight_at(d, s.rows, MB_TORCH_NORM_THREADS)
                                   : mb_device_rows_in_flight(d, s.rows);
    c->rereads_cached = (double)c->rows_in_flight * row_bytes <= cache_bytes;
    for (int r = 0; r < K->n_reads && !c->rereads_cached; r++)
        if (g->nodes[K->reads[r]].shape == MB_SHC_FULL)
            c->dram_read_bytes += (int64_t)(mb_kernel_read_passes_on(g, K, r, d, fw) - 1) * mb_tensor_bytes_at(g, K->reads[r], s);
}

int mb_dram_bytes(const mb_plan *p, mb_shape n, const mb_device *d, mb_framework fw, mb_cost *per_kernel,
                  int64_t *rfo)
{
    const mb_graph *g = p->g;
    /* access trace for the cache model: tensor ids in touch order */
    int trace_cap = 1;
    for (int k = 0; k < p->n_kernels; k++) trace_cap += p->kernels[k].n_reads + p->kernels[k].n_writes;
    int *trace = malloc((size_t)trace_cap * sizeof(int));
    int *last = malloc((size_t)g->n_nodes * sizeof(int));
    int *stamp = calloc((size_t)g->n_nodes, sizeof(int));
    /* kernel that last wrote each tensor with ordinary stores (write-allocate
     * devices: its write-back is still pending), -1 none */
    int *dirty_by = malloc((size_t)g->n_nodes * sizeof(int));
    if (!trace || !last || !stamp || !dirty_by) {
        free(trace); free(last); free(stamp); free(dirty_by);
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++) last[i] = dirty_by[i] = -1;
    int n_trace = 0, cur_stamp = 0;
    const double cache_bytes = mb_device_cache_bytes(d);
    const double retained_bytes = d->cache_retained_mb > 0 ? d->cache_retained_mb * 1048576.0 : 0;
    const int write_allocate = d->write_allocate > 0;

    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        mb_cost *c = &per_kernel[k];
        for (int w = 0; w < K->n_writes; w++) c->dram_write_bytes += mb_tensor_bytes_at(g, K->writes[w], n);
        for (int r = 0; r < K->n_reads; r++) {
            int t = K->reads[r];
            int64_t size = mb_tensor_bytes_at(g, t, n);
            double hit = resident(g, K, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes,
                                  retained_bytes);
            c->dram_read_bytes += (int64_t)llround((double)size * (1 - hit));
        }
        extra_passes(g, K, n, d, fw, cache_bytes, c);
        /* A write-allocate cache (a CPU's, under ordinary stores) reads each
         * line before the store owns it: a tensor the cache does not hold is
         * read from DRAM first. Tensors larger than the cache, and of its
         * size where the spec says stream_at_cache_size (this version's
         * executors; 2-vCPU Xeon guest, a 64 MiB copy under a 64 MiB cache
         * knee: 5.3 ms with plain stores, 2.8 ms streamed), are written with
         * non-temporal stores by the CPU executors (no read). */
        for (int w = 0; w < K->n_writes && write_allocate; w++) {
            int t = K->writes[w];
            int64_t size = mb_tensor_bytes_at(g, t, n);
            if ((double)size > cache_bytes || ((double)size == cache_bytes && d->stream_at_cache_size > 0)) continue;
            if (resident(g, K, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes, 0) < 1)
                c->dram_read_bytes += size, rfo[k] += size;
            dirty_by[t] = k;
        }
        for (int r = 0; r < K->n_reads; r++) { last[K->reads[r]] = n_trace; trace[n_trace++] = K->reads[r]; }
        for (int w = 0; w < K->n_writes; w++) { last[K->writes[w]] = n_trace; trace[n_trace++] = K->writes[w]; }
    }
    /* Write-allocate devices: dirty lines are written back when evicted. A
     * tensor still held by the cache when the plan ends is written back
     * after it (by the next sample's flush on a CPU), not within its time. */
    for (int t = 0; t < g->n_nodes && write_allocate; t++) {
        if (dirty_by[t] != p->n_kernels - 1) continue;
        int64_t size = mb_tensor_bytes_at(g, t, n);
        if (resident(g, NULL, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes, 0) >= 1)
            per_kernel[dirty_by[t]].dram_write_bytes -= size;
    }
    free(dirty_by);
    free(trace);
    free(last);
    free(stamp);
    return 0;
}
