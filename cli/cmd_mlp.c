/* cmd_mlp.c — `membound mlp`: the model of a transformer MLP (or a linear
 * layer and its norm), eager against fused epilogues, with the backward and
 * the checkpointing choice, on one device or many, and its figures' data.
 * Parses options and prints; the model is model/mlp.c's, --measure's run on
 * this CPU mlp_measure.c's. */
#include "cli_common.h"
#include "commands.h"
#include "mlp_measure.h"
#include "mb_mmvar.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* From the reports module when it is built (it needs GSL), NULL without it:
 * the figures drawn from their data files (the figure table's "mlp_kernels"
 * and "mlp_frontier" rows). Declared here as report.h does. */
#pragma weak mb_rpt_draw_figure
int mb_rpt_draw_figure(const char *stem, const char *data, const char *image,
                       char *(*env)(const char *name), mb_err *err);

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound mlp [--layer L] [--preset P] [--dims tokens=T,d_model=D,d_ff=F] [--dtype T]\n"
            "                    [--backward] [--checkpoint store|act|recompute|auto] [--mem-budget BYTES]\n"
            "                    [--device D|--devices L|all] [--json] [--figures DIR]\n"
            "       membound mlp [--layer gpt2|llama] [--preset P] [--dims ...] [--backward] --measure\n"
            "                    [--device SPEC.ini] [--threads N] [--min-s S] [--json]\n"
            "       membound mlp --variant FILE.mb|NAME [--dims name=SIZE,...] [--backward|--measure] [--json]\n"
            "\n"
            "The model of a transformer MLP on x [tokens, d_model]: per plan its kernels (GEMMs by\n"
            "the GEMM model, elementwise and norm kernels by the variant language), FLOPs, DRAM\n"
            "bytes, time and bound; eager (PyTorch's kernels: addmm/mm, the activation's ops)\n"
            "against fused (bias and activation in the GEMM's epilogue, the hidden written once;\n"
            "gated layers: gate and up as one GEMM, act(a)*b in its epilogue) and, for gated\n"
            "layers, liger (the GEMMs, then one act*mul kernel). With --backward: autograd's\n"
            "kernels, the tensors each plan saves, and checkpointing: store them, keep the\n"
            "activation's input and run the activation again (act), or keep x and recompute\n"
            "the first GEMM(s) too; the least time within the memory budget decides.\n"
            "docs/model.md, \"The MLP\".\n"
            "\n"
            "  --layer L        gpt2 (gelu_tanh(x@w1+b1)@w2+b2), llama ((silu(x@wg)*(x@wu))@wd),\n"
            "                   geglu (gelu_tanh for silu), linear-layernorm, linear-rmsnorm\n"
            "                   (norm(x@w+b) over d_ff); default: the preset's, else llama\n"
            "  --preset P       gpt2-small (768, 3072), gpt2-xl (1600, 6400), llama-7b (4096,\n"
            "                   11008), llama-70b (8192, 28672): d_model, d_ff and the layer;\n"
            "                   tokens 4096 (batch 8 x seq 512) unless --dims gives it\n"
            "  --dims LIST      tokens, d_model, d_ff (sizes as --n takes them: 4096, 2^12, 4K);\n"
            "                   each overrides the preset's\n"
            "  --dtype T        f32 (default), bf16 or f16\n"
            "  --backward       the backward pass too (gradients of x, weights and biases)\n"
            "  --checkpoint C   store, act, recompute or auto (default: least time in budget)\n"
            "  --mem-budget B   bytes the saved tensors may take (1G, 2^30, 1073741824)\n"
            "  --device D       a table id or INI spec (default h100-sxm); 'all' or a list:\n"
            "                   a table of where it is compute-bound (--devices: the same)\n"
            "  --json           one JSON object: {\"mlp\": {...}, \"results\": [...]}\n"
            "  --figures DIR    the first device's kernel times, roofline and checkpointing\n"
            "                   frontier (DIR/mlp_kernels, mlp_roofline, mlp_frontier .png, .dat)\n"
            "  --variant V      a layer written with '@' (a .mb file, or llama_mlp, gpt2_mlp,\n"
            "                   linear_rmsnorm, attention): eager as PyTorch runs it against\n"
            "                   fused epilogues; --dims its dimensions (docs/model.md)\n"
            "  --measure        run eager and fused on this CPU (gpt2, llama; f32), checked against\n"
            "                   float64, beside the model on the CPU spec (docs/kernels.md)\n"
            "  --threads N      --measure's threads (default: the spec's sm_count)\n"
            "  --min-s S        --measure's seconds of samples per plan and phase (default 0.3)\n"
            "  -h, --help       this help\n"
            "\n"
            "example: membound mlp --preset llama-7b --dtype bf16 --backward --devices all\n");
}

typedef struct preset {
    const char *name;
    mb_mlp_layer layer;
    int64_t d_model, d_ff;
} preset;

/* GPT-2 (Radford et al. 2019; Hugging Face's gpt2 and gpt2-xl configs: n_embd
 * 768 and 1600, the MLP 4 n_embd) and Llama 2 (Touvron et al. 2023; the
 * 7B and 70B configs: hidden_size 4096 and 8192, intermediate_size 11008 and
 * 28672). */
static const preset presets[] = {
    {"gpt2-small", MB_MLP_GPT2, 768, 3072},
    {"gpt2-xl", MB_MLP_GPT2, 1600, 6400},
    {"llama-7b", MB_MLP_LLAMA, 4096, 11008},
    {"llama-70b", MB_MLP_LLAMA, 8192, 28672},
};
#define N_PRESETS (int)(sizeof presets / sizeof presets[0])
#define DEFAULT_TOKENS 4096 /* batch 8 x seq 512 */

/* "key=size,..." into the three sizes (0: not given); 0 or 2 after one
 * error line. */
static int parse_dims(const char *s, int64_t v[3])
{
    static const char *const keys[3] = {"tokens", "d_model", "d_ff"};
    int seen[3];
    return mb_cli_keyed_sizes("--dims", s, keys, 3, v, seen, "tokens=4096,d_model=4096");
}

/* ---- output ------------------------------------------------------------ */

static json_t *kernel_json(const mb_mlp_kernel *k)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(k->name));
    json_object_set_new(o, "phase", json_string(k->backward ? "backward" : "forward"));
    json_object_set_new(o, "gemm", json_boolean(k->gemm));
    json_object_set_new(o, "recompute", json_boolean(k->recompute));
    json_object_set_new(o, "flops", json_real(k->flops));
    json_object_set_new(o, "dram_read_bytes", json_real(k->dram_read_bytes));
    json_object_set_new(o, "dram_write_bytes", json_real(k->dram_write_bytes));
    json_object_set_new(o, "hidden_write_bytes", json_real(k->hidden_write_bytes));
    json_object_set_new(o, "compute_s", json_real(k->compute_s));
    json_object_set_new(o, "mem_s", json_real(k->mem_s));
    json_object_set_new(o, "launch_s", json_real(k->launch_s));
    json_object_set_new(o, "time_s", json_real(k->time_s));
    json_object_set_new(o, "bound", json_string(mb_bound_name(k->bound)));
    return o;
}

static json_t *plan_json(const mb_mlp_est *e, int p, int c, int chosen)
{
    const mb_mlp_plan *pl = &e->plan[p][c];
    json_t *o = json_object(), *ks = json_array(), *sv = json_array();
    for (int i = 0; i < pl->n_kernels; i++) json_array_append_new(ks, kernel_json(&pl->k[i]));
    for (int i = 0; i < pl->n_saved; i++)
        json_array_append_new(sv, json_pack("{s:s, s:f}", "name", pl->saved[i].name, "bytes", pl->saved[i].bytes));
    json_object_set_new(o, "plan", json_string(mb_mlp_plan_name(pl->id)));
    json_object_set_new(o, "checkpoint", json_string(e->n_ckpt > 1 ? mb_mlp_ckpt_name(pl->ckpt) : "none"));
    json_object_set_new(o, "chosen", json_boolean(chosen));
    json_object_set_new(o, "on_frontier", json_boolean(e->n_ckpt > 1 && mb_mlp_on_frontier(e, pl->id, c)));
    json_object_set_new(o, "kernels", ks);
    json_object_set_new(o, "saved", sv);
    json_object_set_new(o, "saved_bytes", json_real(pl->saved_bytes));
    json_object_set_new(o, "flops", json_real(pl->flops));
    json_object_set_new(o, "dram_read_bytes", json_real(pl->dram_read_bytes));
    json_object_set_new(o, "dram_write_bytes", json_real(pl->dram_write_bytes));
    json_object_set_new(o, "hidden_write_bytes", json_real(pl->hidden_write_bytes));
    json_object_set_new(o, "fwd_time_s", json_real(pl->fwd_time_s));
    json_object_set_new(o, "bwd_time_s", json_real(pl->bwd_time_s));
    json_object_set_new(o, "time_s", json_real(pl->time_s));
    json_object_set_new(o, "bound", json_string(mb_bound_name(pl->bound)));
    return o;
}

/* The option of plan p shown: the one asked, or auto's choice (-1: none fits). */
static int shown(const mb_mlp_est *e, int p, mb_mlp_ckpt ck, double budget)
{
    if (e->n_ckpt == 1) return 0;
    if (ck == MB_MLP_AUTO) return mb_mlp_choose(e, (mb_mlp_plan_id)p, budget);
    return (int)ck;
}

static json_t *est_json(const mb_device *d, const mb_mlp_est *e, mb_mlp_ckpt ck, double budget)
{
    json_t *o = json_object(), *plans = json_array();
    json_object_set_new(o, "device", json_string(d->name));
    json_object_set_new(o, "kind", json_string(d->kind));
    json_object_set_new(o, "peak_tflops", json_real(e->peak_flops_s / 1e12));
    json_object_set_new(o, "peak_key", json_string(e->peak_key));
    json_object_set_new(o, "bandwidth_gbs", json_real(e->bandwidth_gbs));
    json_object_set_new(o, "bandwidth_source", json_string(e->bandwidth_source));
    json_object_set_new(o, "gemm_flops", json_real(e->gemm_flops));
    json_object_set_new(o, "hidden_bytes", json_real(e->hidden_bytes));
    json_object_set_new(o, "weight_bytes", json_real(e->weight_bytes));
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        if (!e->supported[p]) continue;
        int ch = shown(e, p, ck, budget);
        for (int c = 0; c < e->n_ckpt; c++)
            if (e->plan[p][c].valid) json_array_append_new(plans, plan_json(e, p, c, c == ch));
    }
    json_object_set_new(o, "plans", plans);
    return o;
}

static void kernels(const mb_device *d, const mb_mlp_est *e, mb_mlp_ckpt ck, double budget)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    printf("%s: GEMMs at %.4g TFLOP/s (%s), %.0f GB/s (%s); one [tokens, d_ff] tensor %s, weights %s\n\n", d->name,
           e->peak_flops_s / 1e12, e->peak_key, e->bandwidth_gbs, e->bandwidth_source,
           mb_cli_fmt_bytes(e->hidden_bytes, b1, sizeof b1), mb_cli_fmt_bytes(e->weight_bytes, b2, sizeof b2));
    printf("%-6s %-9s %-30s %-5s %9s %11s %11s %11s %10s %s\n", "plan", "ckpt", "kernel", "phase", "GFLOP", "DRAM read",
           "DRAM write", "hidden wr", "time", "bound");
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        if (!e->supported[p]) continue;
        int c = shown(e, p, ck, budget);
        if (c < 0) continue;
        const mb_mlp_plan *pl = &e->plan[p][c];
        const char *cn = e->n_ckpt > 1 ? mb_mlp_ckpt_name(pl->ckpt) : "-";
        for (int i = 0; i < pl->n_kernels; i++) {
            const mb_mlp_kernel *k = &pl->k[i];
            printf("%-6s %-9s %-30s %-5s %9.4g %11s %11s %11s %10s %s\n", mb_mlp_plan_name(pl->id), cn, k->name,
                   k->recompute ? "recmp" : k->backward ? "bwd" : "fwd", k->flops / 1e9,
                   mb_cli_fmt_bytes(k->dram_read_bytes, b1, sizeof b1),
                   mb_cli_fmt_bytes(k->dram_write_bytes, b2, sizeof b2),
                   mb_cli_fmt_bytes(k->hidden_write_bytes, b3, sizeof b3), mb_cli_fmt_time(k->time_s, b4, sizeof b4),
                   mb_bound_name(k->bound));
        }
        printf("%-6s %-9s %-30s %-5s %9.4g %11s %11s %11s %10s %s\n", mb_mlp_plan_name(pl->id), cn, "total", "",
               pl->flops / 1e9, mb_cli_fmt_bytes(pl->dram_read_bytes, b1, sizeof b1),
               mb_cli_fmt_bytes(pl->dram_write_bytes, b2, sizeof b2),
               mb_cli_fmt_bytes(pl->hidden_write_bytes, b3, sizeof b3), mb_cli_fmt_time(pl->time_s, b5, sizeof b5),
               mb_bound_name(pl->bound));
    }
    printf("\n%-6s %-9s %10s %10s %10s %11s %11s %11s %-8s %s\n", "plan", "ckpt", "forward", "backward", "time",
           "DRAM", "hidden wr", "saved", "bound", "");
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        if (!e->supported[p]) continue;
        int ch = shown(e, p, ck, budget);
        for (int c = 0; c < e->n_ckpt; c++) {
            const mb_mlp_plan *pl = &e->plan[p][c];
            char t1[32], t2[32], t3[32];
            if (!pl->valid) continue;
            printf("%-6s %-9s %10s %10s %10s %11s %11s %11s %-8s %s%s\n", mb_mlp_plan_name(pl->id),
                   e->n_ckpt > 1 ? mb_mlp_ckpt_name(pl->ckpt) : "-", mb_cli_fmt_time(pl->fwd_time_s, t1, sizeof t1),
                   mb_cli_fmt_time(pl->bwd_time_s, t2, sizeof t2), mb_cli_fmt_time(pl->time_s, t3, sizeof t3),
                   mb_cli_fmt_bytes(pl->dram_read_bytes + pl->dram_write_bytes, b1, sizeof b1),
                   mb_cli_fmt_bytes(pl->hidden_write_bytes, b2, sizeof b2),
                   mb_cli_fmt_bytes(pl->saved_bytes, b3, sizeof b3), mb_bound_name(pl->bound),
                   c == ch && e->n_ckpt > 1 ? "chosen " : "",
                   e->n_ckpt > 1 && mb_mlp_on_frontier(e, pl->id, c) ? "frontier" : "");
        }
        if (ch < 0) printf("%-6s %-9s no option's saved tensors fit the budget\n", mb_mlp_plan_name((mb_mlp_plan_id)p), "-");
    }
    if (e->n_ckpt > 1) {
        printf("\nsaved for backward (weights are parameters, not counted):\n");
        for (int p = 0; p < MB_MLP_N_PLANS; p++) {
            if (!e->supported[p]) continue;
            for (int c = 0; c < e->n_ckpt; c++) {
                const mb_mlp_plan *pl = &e->plan[p][c];
                if (!pl->valid) continue;
                printf("  %-6s %-9s", mb_mlp_plan_name(pl->id), mb_mlp_ckpt_name(pl->ckpt));
                for (int i = 0; i < pl->n_saved; i++)
                    printf("%s %s %s", i ? "," : "", pl->saved[i].name,
                           mb_cli_fmt_bytes(pl->saved[i].bytes, b1, sizeof b1));
                printf("\n");
            }
        }
    }
    printf("\n");
}

static void summary_row(const mb_device *d, const mb_mlp_est *e, mb_mlp_ckpt ck, double budget, int64_t from_tokens)
{
    char from[32] = "-";
    if (from_tokens > 0) snprintf(from, sizeof from, "%lld", (long long)from_tokens);
    int ce = shown(e, MB_MLP_EAGER, ck, budget), cf = shown(e, MB_MLP_FUSED, ck, budget);
    char t1[32] = "-", t2[32] = "-", r[32] = "-";
    if (ce >= 0) mb_cli_fmt_time(e->plan[MB_MLP_EAGER][ce].time_s, t1, sizeof t1);
    if (cf >= 0) mb_cli_fmt_time(e->plan[MB_MLP_FUSED][cf].time_s, t2, sizeof t2);
    if (ce >= 0 && cf >= 0)
        snprintf(r, sizeof r, "%.2f", e->plan[MB_MLP_EAGER][ce].time_s / e->plan[MB_MLP_FUSED][cf].time_s);
    const char origin = mb_gemm_peak_measured(e->peak_key) ? 'm' : 'd';
    if (from_tokens < 0) { /* a variant: its sizes are its own, no token sweep */
        printf("%-18s %7.4g %c %7.0f %10s %10s %7s %-8s %s\n", d->name, e->peak_flops_s / 1e12, origin,
               e->peak_flops_s / (e->bandwidth_gbs * 1e9), t1, t2, r,
               ce >= 0 ? mb_bound_name(e->plan[MB_MLP_EAGER][ce].bound) : "-",
               cf >= 0 ? mb_bound_name(e->plan[MB_MLP_FUSED][cf].bound) : "-");
        return;
    }
    printf("%-18s %7.4g %c %7.0f %10s %10s %7s %-8s %-8s %9s %s\n", d->name, e->peak_flops_s / 1e12, origin,
           e->peak_flops_s / (e->bandwidth_gbs * 1e9), t1, t2, r,
           ce >= 0 ? mb_bound_name(e->plan[MB_MLP_EAGER][ce].bound) : "-",
           cf >= 0 ? mb_bound_name(e->plan[MB_MLP_FUSED][cf].bound) : "-", from,
           e->n_ckpt > 1 ? (cf >= 0 ? mb_mlp_ckpt_name((mb_mlp_ckpt)cf) : "none fits") : "");
}

/* ---- figures ---------------------------------------------------------- */

/* stacked kernel time: one row per (plan, option), the time in ms of five
 * classes of kernels */
static void kernels_dat(FILE *fp, const mb_mlp *m, const mb_device *d, const mb_mlp_est *e)
{
    fprintf(fp, "title \"%s MLP, tokens %lld, model dim %lld, ffn dim %lld, %s%s: time by kernel class\"\n"
                "device \"%s\"\n\n\n",
            mb_mlp_layer_name(m->layer), (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff,
            mb_dtype_name(m->dtype), m->backward ? ", forward and backward" : "", d->label);
    fprintf(fp, "# plan GEMM-fwd other-fwd GEMM-bwd other-bwd recompute total (ms)\n");
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        if (!e->supported[p]) continue;
        for (int c = 0; c < e->n_ckpt; c++) {
            const mb_mlp_plan *pl = &e->plan[p][c];
            double t[5] = {0, 0, 0, 0, 0};
            if (!pl->valid) continue;
            for (int i = 0; i < pl->n_kernels; i++) {
                const mb_mlp_kernel *k = &pl->k[i];
                int cls = k->recompute ? 4 : (k->backward ? 2 : 0) + !k->gemm;
                t[cls] += k->time_s * 1e3;
            }
            fprintf(fp, "\"%s%s%s\" %.6g %.6g %.6g %.6g %.6g %.6g\n", mb_mlp_plan_name(pl->id),
                    e->n_ckpt > 1 ? "\\n" : "", e->n_ckpt > 1 ? mb_mlp_ckpt_name(pl->ckpt) : "", t[0], t[1], t[2],
                    t[3], t[4], pl->time_s * 1e3);
        }
    }
}

/* block 0: title, device, the roofs (bandwidth, the dtype's GEMM peak);
 * blocks 1 and 2: the eager and the fused plan's kernels (store, where the
 * run has a backward): flop/byte, TFLOP/s, GEMM, backward, name. Kernels
 * without FLOPs (a cast, a copy) have no place on the axes: the block's
 * comment counts them. */
static void roofline_dat(FILE *fp, const mb_mlp *m, const mb_device *d, const mb_mlp_est *e)
{
    const char *key = NULL;
    const double peak = mb_gemm_peak_flops(d, m->dtype, &key);
    fprintf(fp, "title \"%s MLP, tokens %lld, model dim %lld, ffn dim %lld, %s: its kernels on the roofline\"\n"
                "device \"%s\"\nbw_gbs %.6g\npeak_tflops %.6g\npeak_key \"%s\"\n",
            mb_mlp_layer_name(m->layer), (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff,
            mb_dtype_name(m->dtype), d->label, mb_device_bandwidth_gbs(d, NULL), peak / 1e12, key ? key : "");
    static const mb_mlp_plan_id ids[2] = {MB_MLP_EAGER, MB_MLP_FUSED};
    for (int b = 0; b < 2; b++) {
        const mb_mlp_plan *pl = &e->plan[ids[b]][MB_MLP_STORE];
        int skipped = 0;
        for (int i = 0; pl->valid && i < pl->n_kernels; i++) skipped += !(pl->k[i].flops > 0);
        fprintf(fp, "\n\n# %s plan: flop/byte TFLOP/s gemm backward name (%d kernels without FLOPs left out)\n",
                mb_mlp_plan_name(ids[b]), skipped);
        for (int i = 0; e->supported[ids[b]] && pl->valid && i < pl->n_kernels; i++) {
            const mb_mlp_kernel *k = &pl->k[i];
            const double bytes = k->dram_read_bytes + k->dram_write_bytes;
            if (!(k->flops > 0) || !(bytes > 0) || !(k->time_s > 0)) continue;
            fprintf(fp, "%.6g %.6g %d %d \"%s\"\n", k->flops / bytes, k->flops / k->time_s / 1e12, k->gemm,
                    k->backward, k->name);
        }
    }
}

typedef struct fpt { double mb, ms; char label[48]; int front; } fpt;
static int by_mb(const void *a, const void *b)
{
    const fpt *x = a, *y = b;
    return x->mb < y->mb ? -1 : x->mb > y->mb ? 1 : (x->ms > y->ms) - (x->ms < y->ms);
}

/* block 1: every (plan, option): saved MB, time ms, label, on the frontier;
 * block 2: the least time within each budget (a step line) */
static void frontier_dat(FILE *fp, const mb_mlp *m, const mb_device *d, const mb_mlp_est *e)
{
    fprintf(fp, "title \"%s MLP, tokens %lld, model dim %lld, ffn dim %lld, %s: activation memory against time\"\n"
                "device \"%s\"\n\n\n",
            mb_mlp_layer_name(m->layer), (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff,
            mb_dtype_name(m->dtype), d->label);
    fpt pts[MB_MLP_N_PLANS * MB_MLP_N_CKPT];
    int n = 0;
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        if (!e->supported[p]) continue;
        for (int c = 0; c < e->n_ckpt; c++) {
            if (!e->plan[p][c].valid) continue;
            fpt *q = &pts[n++];
            q->mb = e->plan[p][c].saved_bytes / 1e6;
            q->ms = e->plan[p][c].time_s * 1e3;
            snprintf(q->label, sizeof q->label, "%s %s", mb_mlp_plan_name((mb_mlp_plan_id)p),
                     mb_mlp_ckpt_name((mb_mlp_ckpt)c));
            q->front = mb_mlp_on_frontier(e, (mb_mlp_plan_id)p, c);
        }
    }
    qsort(pts, (size_t)n, sizeof *pts, by_mb);
    fprintf(fp, "# saved_MB time_ms label on_frontier\n");
    for (int i = 0; i < n; i++) fprintf(fp, "%.6g %.6g \"%s\" %d\n", pts[i].mb, pts[i].ms, pts[i].label, pts[i].front);
    fprintf(fp, "\n\n# saved_MB least_time_ms within that budget\n");
    double least = INFINITY;
    for (int i = 0; i < n; i++)
        if (pts[i].ms < least) {
            least = pts[i].ms;
            fprintf(fp, "%.6g %.6g\n", pts[i].mb, least);
        }
    if (n) fprintf(fp, "%.6g %.6g\n", pts[n - 1].mb * 1.15 + 1e-9, least);
}

static int write_fig(const char *dir, const char *stem, const mb_mlp *m, const mb_device *d, const mb_mlp_est *e,
                     int *drew)
{
    char dat[1200], png[1200];
    snprintf(dat, sizeof dat, "%s/%s.dat", dir, stem);
    snprintf(png, sizeof png, "%s/%s.png", dir, stem);
    mb_outfile of;
    mb_err err;
    int rc = mb_outfile_open(&of, dat, &err);
    if (rc) return mb_cli_fail_err(rc, &err);
    if (!strcmp(stem, "mlp_kernels")) kernels_dat(of.fp, m, d, e);
    else if (!strcmp(stem, "mlp_roofline")) roofline_dat(of.fp, m, d, e);
    else frontier_dat(of.fp, m, d, e);
    if ((rc = mb_outfile_commit(&of, &err))) return mb_cli_fail_err(rc, &err);
    if (!mb_rpt_draw_figure) return 0;
    if ((rc = mb_rpt_draw_figure(stem, dat, png, getenv, &err))) return mb_cli_fail_err(rc, &err);
    (*drew)++;
    return 0;
}

static int figures(const char *dir, const mb_mlp *m, const mb_device *d, const mb_mlp_est *e)
{
    if (mkdir(dir, 0777) && errno != EEXIST) return mb_cli_fail(1, "--figures %s: %s", dir, strerror(errno));
    int drew = 0, rc = write_fig(dir, "mlp_kernels", m, d, e, &drew);
    if (!rc) rc = write_fig(dir, "mlp_roofline", m, d, e, &drew);
    if (!rc && m->backward) rc = write_fig(dir, "mlp_frontier", m, d, e, &drew);
    if (rc) return rc;
    if (!mb_rpt_draw_figure)
        return mb_cli_fail(1, "figure data written to %s; drawing it needs the reports module (GSL): "
                              "gnuplot -c plots/mlp_kernels.gp %s/mlp_kernels.dat out.png", dir, dir);
    fprintf(stderr, "membound: %d figure%s in %s\n", drew, drew == 1 ? "" : "s", dir);
    return 0;
}

/* ---- a layer written in the language -------------------------------------- */

/* NAME: model/variants/layers/NAME.mb; else a path */
static int load_variant(const char *name, mb_dtype dtype, int backward, mb_mmvar **out, mb_err *e)
{
    char path[1200];
    size_t len = strlen(name);
    int is_path = strchr(name, '/') || (len > 3 && !strcmp(name + len - 3, ".mb"));
    if (is_path) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/layers/%s.mb", mb_variant_dir(), name);
    char *text = NULL;
    size_t n;
    int rc = mb_text_read(path, 1 << 20, &text, &n, e);
    if (rc && !is_path)
        return mb_err_set(e, MB_EINPUT, "unknown layer variant '%s' (built-in: attention, gpt2_mlp, llama_mlp, "
                          "linear_rmsnorm; or a .mb file)", name);
    if (rc) return rc;
    if (backward) { /* --backward: as a 'backward' line */
        char *t2 = malloc(n + 16);
        if (!t2) {
            free(text);
            return mb_err_set(e, MB_ERUN, "out of memory");
        }
        snprintf(t2, n + 16, "%s\nbackward\n", text);
        free(text);
        text = t2;
    }
    rc = mb_mmvar_parse(text, is_path ? name : path, dtype, out, e);
    free(text);
    return rc;
}

static int mlp_variant(const char *name, const char *dims, mb_dtype dtype, int backward,
                       const char *devs, int json, const mb_cli_mlp_measure_opts *measure)
{
    mb_err e;
    mb_mmvar *v = NULL;
    if (load_variant(name, dtype, backward, &v, &e)) return mb_cli_fail_err(2, &e);
    if (dims && mb_mmvar_bind(v, dims, &e)) {
        mb_mmvar_free(v);
        return mb_cli_fail(2, "--dims: %s", e.msg);
    }
    if (measure) {
        int rc = mb_cli_mmvar_measure(v, measure);
        mb_mmvar_free(v);
        return rc;
    }
    mb_device *dv = NULL;
    int nd = 0, *ok = NULL;
    int rc = mb_cli_gemm_devices(devs, dtype, &dv, &nd, &ok);
    if (rc) {
        mb_mmvar_free(v);
        return rc;
    }
    mb_mlp_est *est = calloc((size_t)nd, sizeof *est);
    if (!est) rc = mb_cli_fail(1, "out of memory");
    for (int i = 0; !rc && i < nd; i++)
        if (ok[i] && (rc = mb_mmvar_estimate(v, &dv[i], &est[i], &e)) != MB_OK) rc = mb_cli_fail_err(rc, &e);
    char dt[512];
    mb_mmvar_dims_text(v, dt, sizeof dt);
    if (!rc && json) {
        json_t *arr = json_array();
        for (int i = 0; i < nd; i++)
            if (ok[i]) json_array_append_new(arr, est_json(&dv[i], &est[i], MB_MLP_STORE, 0));
        json_t *root = json_pack("{s:{s:s, s:s, s:s, s:b}, s:o}", "mlp", "variant", mb_mmvar_name(v), "dims", dt,
                                 "dtype", mb_dtype_name(dtype), "backward", mb_mmvar_backward(v), "results", arr);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
    } else if (!rc) {
        printf("mlp variant %s: %s, %s, %s\n", mb_mmvar_name(v), dt, mb_dtype_name(dtype),
               mb_mmvar_backward(v) ? "forward and backward" : "forward");
        if (nd == 1 && ok[0]) kernels(&dv[0], &est[0], MB_MLP_STORE, 0);
        else {
            printf("\n%-18s %9s %7s %10s %10s %7s %-8s %-8s\n", "device", "peak TF", "ridge", "eager", "fused", "ratio",
                   "eager", "fused");
            for (int i = 0; i < nd; i++)
                if (ok[i]) summary_row(&dv[i], &est[i], MB_MLP_STORE, 0, -1);
            printf("\npeak TF: m a large GEMM's measured rate (bf16_gemm_tflops, a CPU's gemm_gflops), d the\n"
                   "datasheet's peak; ridge: the dtype's GEMM peak over the bandwidth, FLOP/B; bound: of the\n"
                   "kernels taking most of the plan's time.\n");
        }
    }
    free(dv), free(est), free(ok);
    mb_mmvar_free(v);
    return rc;
}

int mb_cmd_mlp(int argc, char **argv)
{
    static const struct option opts[] = {
        {"layer", required_argument, 0, 'l'},    {"preset", required_argument, 0, 'p'},
        {"dims", required_argument, 0, 'm'},     {"dtype", required_argument, 0, 't'},
        {"backward", no_argument, 0, 'b'},       {"checkpoint", required_argument, 0, 'c'},
        {"mem-budget", required_argument, 0, 'B'}, {"device", required_argument, 0, 'd'},
        {"devices", required_argument, 0, 'D'},  {"json", no_argument, 0, 'j'},
        {"figures", required_argument, 0, 'f'},  {"help", no_argument, 0, 'h'},
        {"measure", no_argument, 0, 'M'},        {"threads", required_argument, 0, 'P'},
        {"min-s", required_argument, 0, 'S'},    {"variant", required_argument, 0, 'V'},
        {0, 0, 0, 0}};
    mb_cli_mlp_measure_opts mo = {.min_s = 0.3}; /* gemm --measure's CPU default */
    int measure = 0, threads_given = 0, min_s_given = 0, have_ckpt = 0;
    char *end;
    mb_mlp m = {.layer = MB_MLP_LLAMA, .dtype = MB_F32};
    const char *devs = NULL, *figdir = NULL;
    int json = 0, have_layer = 0, have_dims = 0, c;
    const preset *pre = NULL;
    int64_t dims[3] = {0, 0, 0};
    const char *variant = NULL, *dims_text = NULL;

    mb_mlp_ckpt ck = MB_MLP_AUTO;
    double budget = 0;
    mb_err e;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hj", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (have_layer) return mb_cli_fail(2, "--layer given twice");
            if (mb_mlp_layer_parse(optarg, &m.layer, &e)) return mb_cli_fail(2, "--layer: %s", e.msg);
            have_layer = 1;
            break;
        case 'p': {
            if (pre) return mb_cli_fail(2, "--preset given twice");
            for (int i = 0; i < N_PRESETS; i++)
                if (!strcmp(optarg, presets[i].name)) pre = &presets[i];
            if (!pre)
                return mb_cli_fail(2, "--preset: unknown preset '%s' (gpt2-small, gpt2-xl, llama-7b, llama-70b)",
                                   optarg);
            break;
        }
        case 'm':
            if (have_dims) return mb_cli_fail(2, "--dims given twice");
            dims_text = optarg; /* a variant's dimensions are its own: read after the options */
            have_dims = 1;
            break;
        case 't':
            if (mb_cli_dtype(optarg, &m.dtype)) return 2;

            break;
        case 'V':
            if (variant) return mb_cli_fail(2, "--variant given twice");
            variant = optarg;
            break;
        case 'b': m.backward = 1; break;
        case 'c':
            if (mb_mlp_ckpt_parse(optarg, &ck, &e)) return mb_cli_fail(2, "--checkpoint: %s", e.msg);
            have_ckpt = 1;
            break;
        case 'B': {
            int64_t v;
            if (mb_size_parse(optarg, &v, &e)) return mb_cli_fail(2, "--mem-budget: %s", e.msg);
            budget = (double)v;
            have_ckpt = 1;
            break;
        }
        case 'd':
        case 'D':
            if (devs) return mb_cli_fail(2, "--device given twice (a list: --device a,b or 'all')");
            devs = optarg;
            break;
        case 'j': json = 1; break;
        case 'f': figdir = optarg; break;
        case 'M': measure = 1; break;
        case 'P': { /* as gemm --threads */
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 4096)
                return mb_cli_fail(2, "--threads '%s': a count from 1 to 4096", optarg);
            mo.threads = (int)v, threads_given = 1;
            break;
        }
        case 'S': /* as gemm --min-s */
            mo.min_s = strtod(optarg, &end);
            if (end == optarg || *end || !(mo.min_s >= 0 && mo.min_s <= 3600))
                return mb_cli_fail(2, "--min-s '%s': seconds from 0 to 3600", optarg);
            min_s_given = 1;
            break;
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "mlp");
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s'", argv[optind]);
    if (variant) {
        if (have_layer || pre || have_ckpt || figdir)
            return mb_cli_fail(2, "--variant models the layer its file writes: not with --layer, --preset, "
                                  "--checkpoint, --mem-budget or --figures");
        if (!measure && (threads_given || min_s_given))
            return mb_cli_fail(2, "--threads and --min-s time the layer on this CPU: they go with --measure");
        mo.device = devs;
        mo.json = json;
        return mlp_variant(variant, dims_text, m.dtype, m.backward, devs, json, measure ? &mo : NULL);
    }
    if (have_dims && parse_dims(dims_text, dims)) return 2;
    if (pre && !have_layer) m.layer = pre->layer;
    m.tokens = dims[0] ? dims[0] : DEFAULT_TOKENS;
    m.d_model = dims[1] ? dims[1] : pre ? pre->d_model : 0;
    m.d_ff = dims[2] ? dims[2] : pre ? pre->d_ff : 0;
    if (!m.d_model || !m.d_ff)
        return mb_cli_fail(2, "mlp needs d_model and d_ff: --preset (llama-7b, ...) or --dims d_model=D,d_ff=F "
                              "('membound mlp --help')");
    if (!measure && (threads_given || min_s_given))
        return mb_cli_fail(2, "--threads and --min-s time the MLP on this CPU: they go with --measure");
    if (measure) {
        if (figdir) return mb_cli_fail(2, "--measure runs the MLP; --figures draws the model's: not together");
        if (have_ckpt)
            return mb_cli_fail(2, "--measure runs what the eager forward saves (store): not with --checkpoint or "
                                  "--mem-budget");
        mo.device = devs;
        mo.json = json;
        /* the test hook: the fused epilogue wrong on the last panel, so that a
         * failed check's exit and marking are seen (tests/cli_mlp_measure.sh) */
        const char *fault = getenv("MEMBOUND_TEST_MLP_FAULT");
        mo.fault = fault && (!strcmp(fault, "1") || !strcmp(fault, "2")) ? atoi(fault) : 0;
        return mb_cli_mlp_measure(&m, &mo);
    }
    if (ck == MB_MLP_ACT && (m.layer == MB_MLP_LINEAR_LN || m.layer == MB_MLP_LINEAR_RMS))
        return mb_cli_fail(2, "--checkpoint act: layer %s has no act option (its GEMM's output is the norm's input, "
                              "what store keeps)", mb_mlp_layer_name(m.layer));
    if (!m.backward && (ck != MB_MLP_AUTO || budget > 0))
        return mb_cli_fail(2, "--checkpoint and --mem-budget need --backward (without it nothing is saved)");
    if (figdir) { /* refused before anything is printed: a folder, or one that can be made */
        struct stat st;
        char probe[1200];
        snprintf(probe, sizeof probe, "%s/mlp_kernels.dat", figdir);
        if (stat(figdir, &st) == 0 && !S_ISDIR(st.st_mode))
            return mb_cli_fail(2, "--figures %s: not a directory", figdir);
        if (stat(figdir, &st) != 0) { /* to be made: its parent must be a folder */
            char parent[1200];
            snprintf(parent, sizeof parent, "%s", figdir);
            char *sl = strrchr(parent, '/');
            if (sl == parent) sl[1] = 0;
            else if (sl) *sl = 0;
            else snprintf(parent, sizeof parent, ".");
            if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
                return mb_cli_fail(2, "--figures %s: the folder %s does not exist", figdir, parent);
        }
        if (mb_outfile_check_path(stat(figdir, &st) == 0 ? probe : figdir, &e))
            return mb_cli_fail(2, "--figures: %s", e.msg);
    }
    mb_device *dv = NULL;
    int nd = 0, *ok = NULL;
    int rc = mb_cli_gemm_devices(devs, m.dtype, &dv, &nd, &ok);
    if (rc) return rc;
    mb_mlp_est *est = calloc((size_t)nd, sizeof *est);
    if (!est) {
        free(dv), free(ok);
        return mb_cli_fail(1, "out of memory");
    }
    for (int i = 0; i < nd; i++) {
        if (ok[i] && (rc = mb_mlp_estimate(&m, &dv[i], &est[i], &e)) != MB_OK) {
            free(dv), free(est), free(ok);
            return mb_cli_fail_err(rc, &e);
        }
    }
    int first = 0;
    while (first < nd && !ok[first]) first++;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < nd; i++)
            if (ok[i]) json_array_append_new(arr, est_json(&dv[i], &est[i], ck, budget));
        json_t *root = json_pack("{s:{s:s, s:I, s:I, s:I, s:s, s:b, s:s, s:f}, s:o}", "mlp", "layer",
                                 mb_mlp_layer_name(m.layer), "tokens", (json_int_t)m.tokens, "d_model",
                                 (json_int_t)m.d_model, "d_ff", (json_int_t)m.d_ff, "dtype", mb_dtype_name(m.dtype),
                                 "backward", m.backward, "checkpoint", mb_mlp_ckpt_name(ck), "mem_budget_bytes",
                                 budget, "results", arr);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
    } else {
        char bb[32];
        printf("mlp %s: tokens %lld, d_model %lld, d_ff %lld, %s, %s; checkpoint %s, budget %s\n",
               mb_mlp_layer_name(m.layer), (long long)m.tokens, (long long)m.d_model, (long long)m.d_ff,
               mb_dtype_name(m.dtype), m.backward ? "forward and backward" : "forward", m.backward ? mb_mlp_ckpt_name(ck) : "-",
               budget > 0 ? mb_cli_fmt_bytes(budget, bb, sizeof bb) : "none");
        if (nd == 1 && ok[0]) kernels(&dv[0], &est[0], ck, budget);
        else {
            printf("\n%-18s %9s %7s %10s %10s %7s %-8s %-8s %9s %s\n", "device", "peak TF", "ridge", "eager", "fused",
                   "ratio", "eager", "fused", "compute", m.backward ? "fused ckpt" : "");
            for (int i = 0; i < nd; i++) {
                if (!ok[i]) continue;
                int64_t from = mb_mlp_compute_bound_tokens(&m, &dv[i], MB_MLP_FUSED, &e);
                if (from < 0) {
                    free(dv), free(est), free(ok);
                    return mb_cli_fail_err(2, &e);
                }
                summary_row(&dv[i], &est[i], ck, budget, from);
            }
            printf("\ncompute-bound (fused):");
            for (int i = 0; i < nd; i++) {
                int cf = ok[i] ? shown(&est[i], MB_MLP_FUSED, ck, budget) : -1;
                if (cf >= 0 && est[i].plan[MB_MLP_FUSED][cf].bound == MB_BOUND_COMPUTE) printf(" %s", dv[i].name);
            }
            printf("\nmemory-bound (fused):");
            for (int i = 0; i < nd; i++) {
                int cf = ok[i] ? shown(&est[i], MB_MLP_FUSED, ck, budget) : -1;
                if (cf >= 0 && est[i].plan[MB_MLP_FUSED][cf].bound != MB_BOUND_COMPUTE) printf(" %s", dv[i].name);
            }
            printf("\npeak TF: m a large GEMM's measured rate (bf16_gemm_tflops, a CPU's gemm_gflops), d the\n"
                   "datasheet's peak; ridge: the dtype's GEMM peak over the bandwidth, FLOP/B; bound: of the\n"
                   "kernels taking most of the plan's time; compute: the fewest tokens (a power of two) at\n"
                   "which the fused plan is compute-bound, the other sizes as given.\n");
        }
    }
    if (figdir && first < nd) rc = figures(figdir, &m, &dv[first], &est[first]);
    free(dv), free(est), free(ok);
    return rc;
}
