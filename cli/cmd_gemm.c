/* cmd_gemm.c — `membound gemm`: the model of one (batched) matrix multiply
 * on one device or many. Parses options and prints; the model is
 * model/gemm.c's. */
#include "cli_common.h"
#include "commands.h"
#include "measure.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound gemm --mnk MxNxK [--batch B] [--dtype T] [--device D|--devices L|all]\n"
            "                     [--tile MTxNT] [--json]\n"
            "       membound gemm --mnk MxNxK [--batch B] [--dtype T] --measure --device SPEC.ini|GPU\n"
            "                     [--threads T] [--min-s S] [--reps N] [--json]\n"
            "\n"
            "The model of C[M,N] = A[M,K] @ B[K,N] (batch B products, as torch.bmm): FLOPs,\n"
            "the rate the dtype runs at (a GPU's f32 at its plain FP32 peak: PyTorch leaves\n"
            "TF32 off for matmul; bf16 and f16 at bf16_gemm_tflops, a large GEMM's measured\n"
            "rate, else the dense tensor peak; a CPU spec at its calibrated gemm_gflops),\n"
            "tile and wave quantization, DRAM bytes from the tiling\n"
            "against the last-level cache, roofline time, the bound and the ridge (the\n"
            "arithmetic intensity where compute and memory cross). A CPU spec instead takes\n"
            "OpenBLAS's blocking: 16x4 register tiles, C's passes per K block of 448 and\n"
            "A's packed panel beyond the L2, run one after the other (time = compute +\n"
            "memory), at the kernel's rate (gemm_gflops less its shape's memory time).\n"
            "docs/model.md, \"GEMM\" and \"A GEMM on a CPU\".\n"
            "\n"
            "  --mnk MxNxK     the product's sizes, each as --n takes them (4096, 2^12, 4K)\n"
            "  --batch B       independent products (default 1)\n"
            "  --dtype T       f32 (default), bf16 or f16: A, B and C\n"
            "  --device D      a table id or an INI spec file (default h100-sxm); 'all' or a\n"
            "                  comma-separated list for several (--devices is the same)\n"
            "  --tile MTxNT    the output tile, one of 256x128 128x256 128x128 256x64 64x256\n"
            "                  128x64 64x128 64x64 (default: the one of least time)\n"
            "  --measure       also run the product for real, checked against float64 on sampled\n"
            "                  entries, model / measured. On a CPU spec (--device SPEC.ini from\n"
            "                  'membound calibrate'): OpenBLAS's cblas_sgemm on this CPU, f32 only\n"
            "                  (OpenBLAS 0.3.21 exports no bf16 or f16 GEMM), a batch as a loop of\n"
            "                  products as PyTorch's CPU bmm, samples until --min-s and --reps.\n"
            "                  On a GPU's id (--device h100-sxm): cuBLASLt on this machine's GPU,\n"
            "                  f32 without TF32, bf16 or f16, --reps event-timed calls (default 20)\n"
            "  --threads T     the BLAS's threads on a CPU (default: the spec's, sm_count)\n"
            "  --min-s S       a CPU's seconds of timed samples at least (default 0.3)\n"
            "  --reps N        timed samples at least (default 5 on a CPU, 20 on a GPU)\n"
            "  --json          one JSON object: {\"gemm\": {...}, \"results\": [...]}; with\n"
            "                  --measure the result has \"measured\": {...}\n"
            "  -h, --help      this help\n");
}

/* "MxNxK" into m, n, k (each as mb_size_parse reads it); 0 or 2 after one
 * error line. */
static int parse_mnk(const char *s, mb_gemm *g)
{
    char buf[128];
    if (strlen(s) >= sizeof buf) return mb_cli_fail(2, "--mnk '%.40s...' is too long", s);
    snprintf(buf, sizeof buf, "%s", s);
    int64_t v[3];
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, "x", &save); p; p = strtok_r(NULL, "x", &save)) {
        if (n == 3) return mb_cli_fail(2, "--mnk '%s': three sizes MxNxK, got more", s);
        mb_err e;
        if (mb_size_parse(p, &v[n], &e)) return mb_cli_fail(2, "--mnk '%s': %s", s, e.msg);
        n++;
    }
    if (n != 3 || s[0] == 'x' || s[strlen(s) - 1] == 'x' || strstr(s, "xx"))
        return mb_cli_fail(2, "--mnk '%s': expected three sizes MxNxK (4096x4096x4096)", s);
    g->m = v[0], g->n = v[1], g->k = v[2];
    return 0;
}

static int parse_tile(const char *s, mb_gemm *g)
{
    int a, b;
    char end;
    if (sscanf(s, "%dx%d%c", &a, &b, &end) != 2)
        return mb_cli_fail(2, "--tile '%s': expected MTxNT (128x128)", s);
    g->tile_m = a, g->tile_n = b;
    return 0;
}

static json_t *est_json(const mb_device *d, const mb_gemm_est *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_string(d->name));
    json_object_set_new(o, "kind", json_string(d->kind));
    json_object_set_new(o, "flops", json_real(e->flops));
    json_object_set_new(o, "peak_tflops", json_real(e->peak_flops_s / 1e12));
    json_object_set_new(o, "peak_key", json_string(e->peak_key));
    json_object_set_new(o, "tiled", json_boolean(e->tiled));
    if (e->tiled) {
        json_object_set_new(o, "tile", json_pack("[i, i]", e->tile_m, e->tile_n));
        json_object_set_new(o, "tiles", json_integer((json_int_t)e->tiles));
        json_object_set_new(o, "wave_tiles", json_integer((json_int_t)e->wave_tiles));
        json_object_set_new(o, "waves", json_integer((json_int_t)e->waves));
    } else { /* a CPU spec: OpenBLAS's blocking */
        json_object_set_new(o, "kernel_tflops", json_real(e->kernel_flops_s / 1e12));
        json_object_set_new(o, "k_blocks", json_integer((json_int_t)e->k_blocks));
        json_object_set_new(o, "c_passes", json_real(e->c_passes));
        json_object_set_new(o, "pack_spill_bytes", json_real(e->pack_spill_bytes));
    }
    json_object_set_new(o, "eff_tile", json_real(e->eff_tile));
    json_object_set_new(o, "eff_wave", json_real(e->eff_wave));
    json_object_set_new(o, "efficiency", json_real(e->efficiency));
    json_object_set_new(o, "min_bytes", json_real(e->min_bytes));
    json_object_set_new(o, "a_reads", json_real(e->a_reads));
    json_object_set_new(o, "b_reads", json_real(e->b_reads));
    json_object_set_new(o, "dram_read_bytes", json_real(e->dram_read_bytes));
    json_object_set_new(o, "dram_write_bytes", json_real(e->dram_write_bytes));
    json_object_set_new(o, "intensity", json_real(e->intensity));
    json_object_set_new(o, "bandwidth_gbs", json_real(e->bandwidth_gbs));
    json_object_set_new(o, "bandwidth_source", json_string(e->bandwidth_source));
    json_object_set_new(o, "ridge", json_real(e->ridge));
    json_object_set_new(o, "square_crossover", json_real(e->square_crossover));
    json_object_set_new(o, "compute_s", json_real(e->compute_s));
    json_object_set_new(o, "mem_s", json_real(e->mem_s));
    json_object_set_new(o, "launch_s", json_real(e->launch_s));
    json_object_set_new(o, "time_s", json_real(e->time_s));
    json_object_set_new(o, "bound", json_string(mb_bound_name(e->bound)));
    return o;
}

static double load1(void)
{
    double l[3];
    return getloadavg(l, 3) >= 1 ? l[0] : -1;
}

static json_t *measured_json(const mb_meas_gemm_result *r, const mb_gemm_est *e)
{
    json_t *o = json_pack("{s:f, s:f, s:i, s:i, s:f, s:f, s:b, s:i, s:s, s:f, s:f}", "median_s", r->median_s,
                          "gflops", r->gflops_median, "samples", r->samples, "contended", r->contended, "max_rel_err",
                          r->max_rel_err, "tol", r->tol, "verified", r->verified, "threads", r->threads, "blas",
                          r->blas, "model_over_median", e->time_s / r->median_s, "load_average_1m", load1());
    /* a GPU's samples keep no minimum: null, not a made-up ratio */
    json_object_set_new(o, "min_s", r->min_s > 0 ? json_real(r->min_s) : json_null());
    json_object_set_new(o, "model_over_min", r->min_s > 0 ? json_real(e->time_s / r->min_s) : json_null());
    return o;
}

static void measured_print(const mb_meas_gemm_result *r, const mb_gemm_est *e)
{
    char a[32], b[32] = "-", c[32], on[64] = "";
    if (r->min_s > 0) mb_cli_fmt_time(r->min_s, b, sizeof b);
    if (r->threads > 0) snprintf(on, sizeof on, " on %d BLAS thread(s)", r->threads);
    printf("\nmeasured%s, %s: median %s, min %s (%d samples, %d contended), %.4g GFLOP/s;\n"
           "model %s: model / measured median %.3f. Check: worst sampled entry %.3g, bound %.3g: %s.\n"
           "load average (1 min) %.2f\n",
           on, r->blas, mb_cli_fmt_time(r->median_s, a, sizeof a), b, r->samples, r->contended, r->gflops_median,
           mb_cli_fmt_time(e->time_s, c, sizeof c), e->time_s / r->median_s, r->max_rel_err, r->tol,
           r->verified ? "verified" : "FAILED", load1());
}

/* Runs g where d says: a CPU spec through OpenBLAS on this CPU, a GPU's
 * spec through cuBLASLt on this machine's GPU. 0, or the exit code after
 * one error line. */
static int measure_product(const mb_gemm *g, const mb_device *d, mb_meas_gemm_config *mc, int threads_given,
                           int min_s_given, int reps_given, mb_meas_gemm_result *mr)
{
    mb_err e;
    int rc;
    if (!strcmp(d->kind, "cpu")) {
        if (g->dtype != MB_F32)
            return mb_cli_fail(2, "--measure on a CPU runs f32 only: OpenBLAS 0.3.21 exports no %s GEMM "
                                  "(cblas_sbgemm is declared, not exported), and a product widened to f32 is "
                                  "another product", mb_dtype_name(g->dtype));
        if (!threads_given) mc->threads = d->sm_count >= 1 ? (int)d->sm_count : 0;
        else if (d->sm_count >= 1 && mc->threads != (int)d->sm_count)
            mb_cli_warn("--threads %d: the spec was calibrated on %d threads; its gemm_gflops is theirs",
                        mc->threads, (int)d->sm_count);
        rc = mb_meas_gemm_cpu(g, mc, mr, &e);
    } else {
        if (threads_given || min_s_given)
            return mb_cli_fail(2, "--threads and --min-s time a CPU's product: a GPU's takes --reps (event-timed "
                                  "calls, at most 64)");
        if (mc->min_samples > 64) return mb_cli_fail(2, "--reps %d: a GPU's product takes at most 64", mc->min_samples);
        mb_meas_config c;
        mb_meas_config_default(&c);
        rc = mb_meas_cuda_gemm(&c, g, MB_MEAS_GEMM_NONE, reps_given ? mc->min_samples : 20, mr, &e);
        if (rc == MB_ERUN)
            return mb_cli_fail(1, "--measure --device %s runs the product on this machine's GPU: %s", d->name, e.msg);
    }
    if (rc != MB_OK) return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    if (!mr->verified)
        mb_cli_warn("the product failed its float64 check: worst sampled entry %.3g against the bound %.3g",
                    mr->max_rel_err, mr->tol);
    return 0;
}

static void row(const mb_device *d, const mb_gemm_est *e)
{
    char tile[24] = "-", waves[32] = "-", t[32], bytes[32];
    if (e->tiled) {
        snprintf(tile, sizeof tile, "%dx%d", e->tile_m, e->tile_n);
        snprintf(waves, sizeof waves, "%lld/%lld", (long long)e->tiles, (long long)e->waves);
    }
    printf("%-16s %9.4g %-12s %-8s %12s %6.3f %6.3f %5.0fx%-4.0f %10s %8.1f %7.1f %6.0f %10s %s\n", d->name,
           e->peak_flops_s / 1e12, e->peak_key, tile, waves, e->eff_tile, e->eff_wave, e->a_reads, e->b_reads,
           mb_cli_fmt_bytes(e->dram_read_bytes + e->dram_write_bytes, bytes, sizeof bytes), e->intensity,
           e->ridge, e->square_crossover, mb_cli_fmt_time(e->time_s, t, sizeof t), mb_bound_name(e->bound));
}

int mb_cmd_gemm(int argc, char **argv)
{
    static const struct option opts[] = {
        {"mnk", required_argument, 0, 'm'},    {"batch", required_argument, 0, 'b'},
        {"dtype", required_argument, 0, 't'},  {"device", required_argument, 0, 'd'},
        {"devices", required_argument, 0, 'D'}, {"tile", required_argument, 0, 'T'},
        {"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
        {"measure", no_argument, 0, 'M'},      {"threads", required_argument, 0, 'P'},
        {"min-s", required_argument, 0, 'S'},  {"reps", required_argument, 0, 'R'},
        {0, 0, 0, 0}};
    mb_meas_gemm_config mc = {.threads = 0, .min_s = 0.3, .min_samples = 5, .check_samples = 64};
    int measure = 0, threads_given = 0, min_s_given = 0, reps_given = 0;
    char *end;
    mb_gemm g = {.batch = 1, .dtype = MB_F32};
    const char *devs = NULL;
    int json = 0, have_mnk = 0, c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hj", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (parse_mnk(optarg, &g)) return 2;
            have_mnk = 1;
            break;
        case 'b':
            if (mb_cli_size(optarg, &g.batch)) return 2;
            break;
        case 't':
            if (mb_cli_dtype(optarg, &g.dtype)) return 2;
            break;
        case 'd':
        case 'D':
            if (devs) return mb_cli_fail(2, "--device given twice (a list: --device a,b or 'all')");
            devs = optarg;
            break;
        case 'T':
            if (parse_tile(optarg, &g)) return 2;
            break;
        case 'j': json = 1; break;
        case 'M': measure = 1; break;
        case 'P': {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 4096)
                return mb_cli_fail(2, "--threads '%s': a count from 1 to 4096", optarg);
            mc.threads = (int)v, threads_given = 1;
            break;
        }
        case 'S':
            mc.min_s = strtod(optarg, &end);
            if (end == optarg || *end || !(mc.min_s >= 0 && mc.min_s <= 3600))
                return mb_cli_fail(2, "--min-s '%s': seconds from 0 to 3600", optarg);
            min_s_given = 1;
            break;
        case 'R': {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 100000)
                return mb_cli_fail(2, "--reps '%s': a count from 1 to 100000", optarg);
            mc.min_samples = (int)v;
            reps_given = 1;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "gemm");
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s'", argv[optind]);
    if (!have_mnk) return mb_cli_fail(2, "gemm needs --mnk MxNxK (4096x4096x4096; 'membound gemm --help')");
    if (!measure && (threads_given || min_s_given || reps_given))
        return mb_cli_fail(2, "--threads, --min-s and --reps time a product: they go with --measure");
    if (measure) {
        if (!devs || strchr(devs, ',') || !strcmp(devs, "all"))
            return mb_cli_fail(2, "--measure needs one device: a CPU spec (--device SPEC.ini from 'membound "
                                  "calibrate') or the GPU's table id (--device h100-sxm)");
        if (g.tile_m || g.tile_n) return mb_cli_fail(2, "--tile is the model's choice of tile: not with --measure");
    }
    mb_device *dv = NULL;
    int nd = 0, *ok = NULL; /* ok[i]: device i estimated */
    int rc = mb_cli_gemm_devices(devs, g.dtype, &dv, &nd, &ok);
    if (rc) return rc;
    mb_gemm_est *est = calloc((size_t)nd, sizeof *est);
    if (!est) {
        free(dv), free(ok);
        return mb_cli_fail(1, "out of memory");
    }
    for (int i = 0; i < nd; i++) { /* anything but a missing rate fails for every device alike */
        mb_err e;
        if (ok[i] && mb_gemm_estimate(&g, &dv[i], &est[i], &e) != MB_OK) {
            free(dv), free(est), free(ok);
            return mb_cli_fail_err(2, &e);
        }
    }
    mb_meas_gemm_result mr;
    if (measure && (rc = measure_product(&g, &dv[0], &mc, threads_given, min_s_given, reps_given, &mr))) {
        free(dv), free(est), free(ok);
        return rc;
    }
    const double s = (double)mb_dtype_bytes(g.dtype);
    const double min_bytes = (double)g.batch * s * ((double)g.m * g.k + (double)g.k * g.n + (double)g.m * g.n);
    const double flops = 2.0 * (double)g.m * g.n * g.k * (double)g.batch;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < nd; i++)
            if (ok[i]) json_array_append_new(arr, est_json(&dv[i], &est[i]));
        if (measure) json_object_set_new(json_array_get(arr, 0), "measured", measured_json(&mr, &est[0]));
        json_t *root = json_pack("{s:{s:I, s:I, s:I, s:I, s:s, s:f, s:f}, s:o}", "gemm", "m", (json_int_t)g.m,
                                 "n", (json_int_t)g.n, "k", (json_int_t)g.k, "batch", (json_int_t)g.batch,
                                 "dtype", mb_dtype_name(g.dtype), "flops", flops, "min_bytes", min_bytes,
                                 "results", arr);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
    } else {
        char fb[32];
        printf("gemm %lldx%lldx%lld (MxNxK), batch %lld, %s: %.4g GFLOP; A, B and C once: %s\n\n",
               (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch, mb_dtype_name(g.dtype),
               flops / 1e9, mb_cli_fmt_bytes(min_bytes, fb, sizeof fb));
        printf("%-16s %9s %-12s %-8s %12s %6s %6s %10s %10s %8s %7s %6s %10s %s\n", "device", "peak TF", "(key)",
               "tile", "tiles/waves", "e_tile", "e_wave", "A x B rd", "DRAM", "AI F/B", "ridge", "sq. n*",
               "time", "bound");
        for (int i = 0; i < nd; i++)
            if (ok[i]) row(&dv[i], &est[i]);
        printf("\nAI: FLOPs per DRAM byte; ridge: the peak over the bandwidth, where compute and memory\n"
               "cross; sq. n*: the n of an n x n x n product whose least traffic meets the ridge.\n"
               "A x B rd: times A and B come from DRAM. GPU f32 runs at the plain FP32 peak (PyTorch\n"
               "leaves TF32 off for matmul).\n");
        if (measure) measured_print(&mr, &est[0]);
    }
    free(dv), free(est), free(ok);
    return 0;
}
