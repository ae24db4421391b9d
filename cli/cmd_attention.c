/* cmd_attention.c — `membound attention`: the model of attention, standard
 * against FlashAttention, on one device or many. Parses options and prints;
 * the model is model/attention.c's. */
#include "attention_measure.h"
#include "attention_out.h"
#include "cli_common.h"
#include "commands.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound attention --dims seq=N,head_dim=D[,batch=B][,heads=H] [--causal] [--backward]\n"
            "                          [--dtype T] [--device D|--devices L|all] [--plan] [--mem-budget M]\n"
            "                          [--seq-sweep | --figures DIR [--seqs LIST]] [--json]\n"
            "       membound attention --dims ... --measure [--device SPEC.ini] [--threads N]\n"
            "                          [--min-time S] [--json]\n"
            "\n"
            "The model of softmax(q @ k^T * scale [+ mask]) @ v, q, k, v of [batch, heads, seq,\n"
            "head_dim], three plans: standard (PyTorch eager's kernels; P saved for backward),\n"
            "recompute (the same kernels; the log-sum-exp saved, the backward making S and P\n"
            "again) and flash (FlashAttention: one tiled kernel, tiles from onchip_kib; O and\n"
            "the log-sum-exp saved). Per kernel FLOPs, DRAM bytes, time and bound; per plan\n"
            "the memory saved for backward and the longest seq that fits (mem_gb).\n"
            "docs/model.md, \"Attention\".\n"
            "\n"
            "  --dims LIST      seq and head_dim (sizes as --n takes them: 4096, 2^12, 4K), batch\n"
            "                   and heads (default 1): batch=8,heads=16,seq=4096,head_dim=128\n"
            "  --causal         the causal mask (flash skips the tiles above the diagonal)\n"
            "  --backward       the backward pass too\n"
            "  --dtype T        f32 (default), bf16 or f16\n"
            "  --device D       table id or INI spec (default h100-sxm); a list or 'all'\n"
            "  --plan           the backward's choice (implies --backward): each plan's time,\n"
            "                   what it keeps (names, bytes), the frontier, the choice and why\n"
            "  --mem-budget M   the most one attention may keep for backward (implies --plan):\n"
            "                   1G, 2^30, 1GiB (binary) or 40GB, 512MB (decimal)\n"
            "  --seq-sweep      per device, the longest seq each plan fits and the seq where its\n"
            "                   time per token doubles from its best (seq in --dims not needed)\n"
            "  --figures DIR    per device: time, DRAM and saved memory against seq, predicted\n"
            "                   TFLOP/s, the frontier; the longest seq across devices (PNG)\n"
            "  --seqs LIST      the figures' seq (default 2^8..2^18)\n"
            "  --json           one JSON object\n"
            "  --measure        run standard and flash on this CPU (f32, docs/attention_cpu.md):\n"
            "                   checked against float64 (and finite differences with --backward),\n"
            "                   timed with the cache evicted, the model beside each kernel and plan;\n"
            "                   --device is a CPU spec (default ./local-cpu.ini, this host's cached\n"
            "                   calibration, or a calibration now). Exit 1 when a check fails.\n"
            "  --threads N      CPU threads for --measure (default: all cores)\n"
            "  --min-time S     seconds of samples a plan takes at least (default 1)\n"
            "  -h, --help       this help\n");
}

/* "key=value,..." into a (seq may be left out when seq_optional); 0 or 2
 * after one error line. */
static int parse_dims(const char *s, mb_attn *a, int seq_optional)
{
    static const char *const keys[4] = {"batch", "heads", "seq", "head_dim"};
    int64_t v[4] = {a->batch, a->heads, a->seq, a->head_dim};
    int seen[4];
    if (mb_cli_keyed_sizes("--dims", s, keys, 4, v, seen, "seq=4096,head_dim=128")) return 2;
    if ((!seen[2] && !seq_optional) || !seen[3])
        return mb_cli_fail(2, seq_optional ? "--dims '%s': head_dim is needed" : "--dims '%s': seq and head_dim are needed",
                           s);
    a->batch = v[0], a->heads = v[1], a->seq = v[2], a->head_dim = v[3];
    return 0;
}

static json_t *kernel_json(const mb_attn_kernel *k)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(k->name));
    json_object_set_new(o, "phase", json_string(k->backward ? "backward" : "forward"));
    json_object_set_new(o, "gemm", json_boolean(k->gemm));
    json_object_set_new(o, "flops", json_real(k->flops));
    json_object_set_new(o, "exps", json_real(k->exps));
    json_object_set_new(o, "dram_read_bytes", json_real(k->dram_read_bytes));
    json_object_set_new(o, "dram_write_bytes", json_real(k->dram_write_bytes));
    json_object_set_new(o, "nn_write_bytes", json_real(k->nn_write_bytes));
    json_object_set_new(o, "compute_s", json_real(k->compute_s));
    json_object_set_new(o, "mem_s", json_real(k->mem_s));
    json_object_set_new(o, "launch_s", json_real(k->launch_s));
    json_object_set_new(o, "time_s", json_real(k->time_s));
    json_object_set_new(o, "bound", json_string(mb_bound_name(k->bound)));
    return o;
}

static json_t *plan_json(const mb_attn_plan *p)
{
    json_t *o = json_object(), *ks = json_array();
    for (int i = 0; i < p->n_kernels; i++) json_array_append_new(ks, kernel_json(&p->k[i]));
    json_object_set_new(o, "plan", json_string(mb_attn_plan_name(p->id)));
    json_object_set_new(o, "kernels", ks);
    json_object_set_new(o, "flops", json_real(p->flops));
    json_object_set_new(o, "dram_read_bytes", json_real(p->dram_read_bytes));
    json_object_set_new(o, "dram_write_bytes", json_real(p->dram_write_bytes));
    json_object_set_new(o, "nn_write_bytes", json_real(p->nn_write_bytes));
    json_object_set_new(o, "fwd_time_s", json_real(p->fwd_time_s));
    json_object_set_new(o, "bwd_time_s", json_real(p->bwd_time_s));
    json_object_set_new(o, "time_s", json_real(p->time_s));
    json_object_set_new(o, "bound", json_string(mb_bound_name(p->bound)));
    json_object_set_new(o, "saved_bytes", json_real(p->saved_bytes));
    json_object_set_new(o, "peak_bytes", json_real(p->peak_bytes));
    json_object_set_new(o, "max_seq", p->max_seq > 0 ? json_integer((json_int_t)p->max_seq) : json_null());
    return o;
}

static json_t *est_json(const mb_device *d, const mb_attn_est *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_string(d->name));
    json_object_set_new(o, "kind", json_string(d->kind));
    json_object_set_new(o, "mem_gb", d->mem_gb > 0 ? json_real(d->mem_gb) : json_null());
    json_object_set_new(o, "peak_tflops", json_real(e->peak_flops_s / 1e12));
    json_object_set_new(o, "peak_key", json_string(e->peak_key));
    json_object_set_new(o, "exp_per_s", json_real(e->exp_per_s));
    json_object_set_new(o, "exp_key", json_string(e->exp_key));
    json_object_set_new(o, "bandwidth_gbs", json_real(e->bandwidth_gbs));
    json_object_set_new(o, "bandwidth_source", json_string(e->bandwidth_source));
    json_object_set_new(o, "cache_bytes", json_real(e->cache_bytes));
    json_object_set_new(o, "onchip_bytes", json_real(e->onchip_bytes));
    json_object_set_new(o, "block_r", json_integer((json_int_t)e->block_r));
    json_object_set_new(o, "block_c", json_integer((json_int_t)e->block_c));
    json_object_set_new(o, "tiles_r", json_integer((json_int_t)e->tiles_r));
    json_object_set_new(o, "tiles_c", json_integer((json_int_t)e->tiles_c));
    json_object_set_new(o, "tile_pairs", json_integer((json_int_t)e->tile_pairs));
    json_object_set_new(o, "heads_in_flight", json_integer((json_int_t)e->heads_in_flight));
    json_object_set_new(o, "kv_reads", json_real(e->kv_reads));
    json_object_set_new(o, "io_nocache_bytes", json_real(e->io_nocache_bytes));
    json_object_set_new(o, "standard", plan_json(&e->plan[MB_ATTN_STANDARD]));
    json_object_set_new(o, "flash", plan_json(&e->plan[MB_ATTN_FLASH]));
    json_object_set_new(o, "recompute", plan_json(&e->plan[MB_ATTN_RECOMPUTE]));
    return o;
}

static const char *fmt_seq(int64_t n, char *buf, size_t size)
{
    if (n <= 0) snprintf(buf, size, "-");
    else snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* the kernels of both plans on one device */
static void kernels(const mb_device *d, const mb_attn_est *e, int backward)
{
    char b1[32], b2[32], b3[32], b4[32];
    printf("%s: GEMMs at %.4g TFLOP/s (%s), exp at %.4g G/s (%s), %.0f GB/s (%s), cache %s,\n"
           "  on-chip %.0f KiB: flash tiles Br %lld x Bc %lld, %lld x %lld tiles, %lld pairs a head\n\n",
           d->name, e->peak_flops_s / 1e12, e->peak_key, e->exp_per_s / 1e9,
           e->exp_key, e->bandwidth_gbs, e->bandwidth_source, mb_cli_fmt_bytes(e->cache_bytes, b1, sizeof b1),
           e->onchip_bytes / 1024, (long long)e->block_r, (long long)e->block_c, (long long)e->tiles_r,
           (long long)e->tiles_c, (long long)e->tile_pairs);
    printf("%-9s %-15s %-5s %10s %11s %11s %11s %10s %s\n", "plan", "kernel", "phase", "GFLOP", "DRAM read",
           "DRAM write", "(seq^2)", "time", "bound");
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        const mb_attn_plan *pl = &e->plan[p];
        if (p == MB_ATTN_RECOMPUTE && !backward) continue; /* its forward is standard's and the LSE */
        for (int i = 0; i < pl->n_kernels; i++) {
            const mb_attn_kernel *k = &pl->k[i];
            printf("%-9s %-15s %-5s %10.4g %11s %11s %11s %10s %s\n", mb_attn_plan_name(pl->id), k->name,
                   k->backward ? "bwd" : "fwd", k->flops / 1e9,
                   mb_cli_fmt_bytes(k->dram_read_bytes, b1, sizeof b1),
                   mb_cli_fmt_bytes(k->dram_write_bytes, b2, sizeof b2),
                   mb_cli_fmt_bytes(k->nn_write_bytes, b3, sizeof b3), mb_cli_fmt_time(k->time_s, b4, sizeof b4),
                   mb_bound_name(k->bound));
        }
        printf("%-9s %-15s %-5s %10.4g %11s %11s %11s %10s %s\n", mb_attn_plan_name(pl->id), "total", "",
               pl->flops / 1e9, mb_cli_fmt_bytes(pl->dram_read_bytes, b1, sizeof b1),
               mb_cli_fmt_bytes(pl->dram_write_bytes, b2, sizeof b2),
               mb_cli_fmt_bytes(pl->nn_write_bytes, b3, sizeof b3), mb_cli_fmt_time(pl->time_s, b4, sizeof b4),
               mb_bound_name(pl->bound));
    }
    printf("\nflash forward: K and V from DRAM %.4gx a head (%lld heads in flight); with no cache\n"
           "(Theorem 2, Theta(N^2 d^2 / M)) its DRAM bytes would be %s.\n\n",
           e->kv_reads, (long long)e->heads_in_flight, mb_cli_fmt_bytes(e->io_nocache_bytes, b1, sizeof b1));
}

static void summary(const mb_device *d, const mb_attn_est *e)
{
    const mb_attn_plan *s = &e->plan[MB_ATTN_STANDARD], *f = &e->plan[MB_ATTN_FLASH];
    char t1[32], t2[32], b1[32], b2[32], b3[32], b4[32], n1[32], n2[32];
    printf("%-16s %10s %10s %7.2f %11s %11s %11s %11s %10s %10s\n", d->name, mb_cli_fmt_time(s->time_s, t1, sizeof t1),
           mb_cli_fmt_time(f->time_s, t2, sizeof t2), s->time_s / f->time_s,
           mb_cli_fmt_bytes(s->dram_read_bytes + s->dram_write_bytes, b1, sizeof b1),
           mb_cli_fmt_bytes(f->dram_read_bytes + f->dram_write_bytes, b2, sizeof b2),
           mb_cli_fmt_bytes(s->saved_bytes, b3, sizeof b3), mb_cli_fmt_bytes(f->saved_bytes, b4, sizeof b4),
           fmt_seq(s->max_seq, n1, sizeof n1), fmt_seq(f->max_seq, n2, sizeof n2));
}

/* --plan: the planner's section for one device, a row each for several */
static void planner(const mb_attn *a, const mb_device *dv, const int *ok, const mb_attn_est *est, int nd,
                    double budget)
{
    int n = 0;
    for (int i = 0; i < nd; i++) n += ok[i] != 0;
    if (n == 1) {
        for (int i = 0; i < nd; i++)
            if (ok[i]) printf("\n"), mb_cli_attn_plan_print(a, &dv[i], &est[i], budget);
        return;
    }
    mb_cli_attn_plan_header(budget);
    for (int i = 0; i < nd; i++)
        if (ok[i]) mb_cli_attn_plan_row(&dv[i], &est[i], budget);
}

/* --figures DIR [--seqs LIST]: default 2^8..2^18, every power of two */
static int figures(const mb_attn *a, const mb_device *dv, const int *ok, int nd, const char *dir, const char *list)
{
    int64_t *seqs = NULL;
    int n = 0;
    mb_err e;
    if (mb_cli_parse_sizes(list ? list : "2^8..2^18", &seqs, &n, &e)) return mb_cli_fail(2, "--seqs: %s", e.msg);
    if (n < 2) {
        free(seqs);
        return mb_cli_fail(2, "--seqs '%s': at least two sequence lengths", list);
    }
    int rc = mb_cli_attn_figures(a, dv, ok, nd, dir, seqs, n);
    free(seqs);
    return rc;
}

int mb_cmd_attention(int argc, char **argv)
{
    static const struct option opts[] = {
        {"dims", required_argument, 0, 'm'},    {"causal", no_argument, 0, 'c'},
        {"backward", no_argument, 0, 'b'},      {"dtype", required_argument, 0, 't'},
        {"device", required_argument, 0, 'd'},  {"devices", required_argument, 0, 'D'},
        {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
        {"plan", no_argument, 0, 'P'},          {"mem-budget", required_argument, 0, 'B'},
        {"seq-sweep", no_argument, 0, 'S'},     {"figures", required_argument, 0, 'F'},
        {"seqs", required_argument, 0, 'L'},    {"measure", no_argument, 0, 'M'},
        {"threads", required_argument, 0, 'T'}, {"min-time", required_argument, 0, 'I'},
        {0, 0, 0, 0}};
    mb_cli_attn_measure_opts mo = {0};
    int measure = 0;
    mb_attn a = {.batch = 1, .heads = 1, .dtype = MB_F32};
    const char *devs = NULL, *dims = NULL, *fig_dir = NULL, *seqs_arg = NULL;
    int json = 0, c, plan = 0, sweep = 0;
    double budget = 0;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hj", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (dims) return mb_cli_fail(2, "--dims given twice");
            dims = optarg;
            break;
        case 'P': plan = 1; break;
        case 'B':
            if (mb_cli_attn_parse_bytes("--mem-budget", optarg, &budget)) return 2;
            plan = 1;
            break;
        case 'S': sweep = 1; break;
        case 'F': fig_dir = optarg; break;
        case 'L': seqs_arg = optarg; break;
        case 'c': a.causal = 1; break;
        case 'b': a.backward = 1; break;
        case 't':
            if (mb_cli_dtype(optarg, &a.dtype)) return 2;
            break;
        case 'd':
        case 'D':
            if (devs) return mb_cli_fail(2, "--device given twice (a list: --device a,b or 'all')");
            devs = optarg;
            break;
        case 'j': json = 1; break;
        case 'M': measure = 1; break;
        case 'T': {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (!end || *end || end == optarg || v < 1 || v > 4096)
                return mb_cli_fail(2, "--threads: expected a whole number in [1, 4096], got '%s'", optarg);
            mo.threads = (int)v;
            break;
        }
        case 'I': {
            char *end = NULL;
            mo.min_time_s = strtod(optarg, &end);
            if (!end || *end || end == optarg || !(mo.min_time_s > 0 && mo.min_time_s <= 3600))
                return mb_cli_fail(2, "--min-time: expected seconds in (0, 3600], got '%s'", optarg);
            break;
        }
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "attention");
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s'", argv[optind]);
    if (!dims)
        return mb_cli_fail(2, "attention needs --dims (batch=8,heads=16,seq=4096,head_dim=128; "
                              "'membound attention --help')");
    if (measure) {
        if (plan || sweep || fig_dir) return mb_cli_fail(2, "--measure runs one shape: not with --plan, --seq-sweep or --figures");
        if (parse_dims(dims, &a, 0)) return 2;
        mo.device = devs, mo.json = json;
        return mb_cli_attention_measure(&a, &mo);
    }
    if (mo.threads || mo.min_time_s > 0) return mb_cli_fail(2, "--threads and --min-time go with --measure");
    if (parse_dims(dims, &a, sweep || fig_dir)) return 2;
    if (sweep && fig_dir) return mb_cli_fail(2, "--seq-sweep and --figures: one at a time");
    if (seqs_arg && !fig_dir) return mb_cli_fail(2, "--seqs is the sequence lengths of --figures");
    if (plan && (sweep || fig_dir)) return mb_cli_fail(2, "--plan and --mem-budget print one shape's choice: not with "
                                                          "--seq-sweep or --figures");
    if (plan) a.backward = 1; /* the choice is the backward's */
    mb_device *dv = NULL;
    int nd = 0, *ok = NULL; /* ok[i]: device i estimated */
    int rc = mb_cli_gemm_devices(devs, a.dtype, &dv, &nd, &ok);
    if (rc) return rc;
    if (sweep || fig_dir) {
        rc = sweep ? mb_cli_attn_sweep(&a, dv, ok, nd, json) : figures(&a, dv, ok, nd, fig_dir, seqs_arg);
        free(dv), free(ok);
        return rc;
    }
    mb_attn_est *est = calloc((size_t)nd, sizeof *est);
    if (!est) {
        free(dv), free(ok);
        return mb_cli_fail(1, "out of memory");
    }
    for (int i = 0; i < nd; i++) { /* anything but a missing rate fails for every device alike */
        mb_err e;
        if (ok[i] && mb_attn_estimate(&a, &dv[i], &est[i], &e) != MB_OK) {
            free(dv), free(est), free(ok);
            return mb_cli_fail_err(2, &e);
        }
    }
    const double BH = (double)a.batch * (double)a.heads, N = (double)a.seq, s = (double)mb_dtype_bytes(a.dtype);
    const double model_flops = mb_attn_model_flops(&a);
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < nd; i++)
            if (ok[i]) {
                json_t *o = est_json(&dv[i], &est[i]);
                if (plan) json_object_set_new(o, "planner", mb_cli_attn_plan_json(&a, &dv[i], &est[i], budget));
                json_array_append_new(arr, o);
            }
        json_t *root = json_pack("{s:{s:I, s:I, s:I, s:I, s:s, s:b, s:b, s:f, s:f}, s:o}", "attention", "batch",
                                 (json_int_t)a.batch, "heads", (json_int_t)a.heads, "seq", (json_int_t)a.seq,
                                 "head_dim", (json_int_t)a.head_dim, "dtype", mb_dtype_name(a.dtype), "causal",
                                 a.causal, "backward", a.backward, "model_flops", model_flops, "p_bytes",
                                 BH * N * N * s, "results", arr);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
    } else {
        char pb[32];
        printf("attention batch %lld, heads %lld, seq %lld, head_dim %lld, %s%s, %s\n"
               "%.4g GFLOP as attention papers count them (4 BH N^2 d forward, 2.5x that backward,\n"
               "halved when causal); P is %s\n\n",
               (long long)a.batch, (long long)a.heads, (long long)a.seq, (long long)a.head_dim,
               mb_dtype_name(a.dtype), a.causal ? ", causal" : "", a.backward ? "forward and backward" : "forward",
               model_flops / 1e9, mb_cli_fmt_bytes(BH * N * N * s, pb, sizeof pb));
        for (int i = 0; i < nd && nd == 1; i++)
            if (ok[i]) kernels(&dv[i], &est[i], a.backward);
        printf("%-16s %10s %10s %7s %11s %11s %11s %11s %10s %10s\n", "device", "standard", "flash", "ratio",
               "std DRAM", "flash DRAM", "std saved", "flash saved", "std max N", "flash max N");
        for (int i = 0; i < nd; i++)
            if (ok[i]) summary(&dv[i], &est[i]);
        printf("\nsaved: kept for backward beyond q, k, v (standard: P; flash: O and the f32 log-sum-exp).\n"
               "max N: the longest seq whose peak memory fits the device's mem_gb, the other sizes as given\n"
               "(standard: two seq x seq tensors live at the softmax, three in the backward).\n");
        if (plan) planner(&a, dv, ok, est, nd, budget);
    }
    free(dv), free(est), free(ok);
    return 0;
}
