/* lecture.c — the lecture's demos, series, sizes, counts, claims and display
 * names in one table; variant definitions (embedded, given, built-in) and
 * how a row's variant is loaded. Does not join, fit or draw. */
#include "report_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P20 ((int64_t)1 << 20)
#define P24 ((int64_t)1 << 24)
#define P25 ((int64_t)1 << 25)

const mb_rpt_demo mb_rpt_lecture[MB_RPT_N_DEMOS] = {
    {"copy", "copy", "low precision: copy f32 vs bf16", P25, 2,
     {{"eager", MB_F32, "2n"}, {"eager", MB_BF16, "2n"}}, 1,
     {{"low precision: a bf16 copy moves half the bytes of f32 and takes about half the time",
       "8 B / 4 B per element = 2x", 0, 1, 2.0, MB_RPT_CLAIM_ABOUT}}},
    {"sin2_plus_cos2", "sin^2+cos^2", "fusion: sin^2(x) + cos^2(x)", P24, 2,
     {{"eager", MB_F32, "11n"}, {"fused", MB_F32, "2n"}}, 1,
     {{"fusion: sin^2+cos^2 fused moves 2n instead of 11n", "11n / 2n = 5.5x", 0, 1, 5.5, MB_RPT_CLAIM_ABOUT}}},
    {"gelu_tanh", "GELU tanh", "fusion: GELU (tanh form)", P24, 2,
     {{"eager", MB_F32, "18n"}, {"fused", MB_F32, "2n"}}, 1,
     {{"fusion: GELU (tanh) fused moves 2n instead of 18n", "18n / 2n = 9x", 0, 1, 9.0, MB_RPT_CLAIM_ABOUT}}},
    {"sigmoid3", "σ(σ(σ(x)))", "recomputation: sigmoid(sigmoid(sigmoid(x)))", P20, 3,
     {{"eager", MB_F32, "15n"}, {"store", MB_F32, "9n"}, {"recompute", MB_F32, "5n"}}, 2,
     {{"recomputation: sigmoid(sigmoid(sigmoid(x))) fwd+bwd moves 5n instead of 9n (store)", "9n / 5n = 1.8x", 1,
       2, 1.8, MB_RPT_CLAIM_ABOUT},
      {"recomputation: sigmoid(sigmoid(sigmoid(x))) fwd+bwd moves 5n instead of 15n (eager)", "15n / 5n = 3x", 0,
       2, 3.0, MB_RPT_CLAIM_ABOUT}}},
};

const mb_rpt_row_claim mb_rpt_row_claims[MB_RPT_N_ROW_CLAIMS] = {
    {"softmax", "eager", "fused", "4096x1024", (int64_t)4096 * 1024,
     "normalization: fusing a hand-written softmax moves 2n instead of 8n", "8n / 2n = 4x", 4.0,
     "lecture count", MB_RPT_CLAIM_ABOUT},
    {"softmax", "fused", "online", "64x4194304", (int64_t)64 << 22,
     "normalization: online softmax moves 3n instead of 4n when a row does not fit on chip", "4n / 3n = 1.33x",
     4.0 / 3.0, "DRAM count", MB_RPT_CLAIM_ABOUT},
    {"softmax_op", "eager", "online", "64x4194304", (int64_t)64 << 22,
     "normalization: F.softmax's three passes (4n) against online softmax (3n) on long rows", "4n / 3n = 1.33x",
     4.0 / 3.0, "DRAM count", MB_RPT_CLAIM_ABOUT},
    {"rmsnorm", "eager", "fused", "4096x1024", (int64_t)4096 * 1024,
     "normalization: fusing Hugging Face's RMSNorm moves 2n instead of 7n", "7n / 2n = 3.5x", 3.5,
     "lecture count", MB_RPT_CLAIM_ABOUT},
    {"layernorm", "eager", "fused", "4096x1024", (int64_t)4096 * 1024,
     "normalization: fusing a hand-written LayerNorm moves 2n instead of 12n", "12n / 2n = 6x", 6.0,
     "lecture count", MB_RPT_CLAIM_ABOUT},
};

const char *mb_rpt_claim_kind_name(mb_rpt_claim_kind k)
{
    return k == MB_RPT_CLAIM_AT_LEAST ? "at least" : "about";
}

const mb_rpt_demo *mb_rpt_demo_of(const char *variant)
{
    for (int i = 0; i < MB_RPT_N_DEMOS; i++)
        if (!strcmp(mb_rpt_lecture[i].variant, variant)) return &mb_rpt_lecture[i];
    return NULL;
}

int64_t mb_rpt_claim_n(const mb_rpt_demo *d, double floor_bytes, int64_t max_n, int *capped)
{
    /* bytes per element of the series that moves least: "2n" in its dtype */
    double per = 0;
    for (int c = 0; c < d->n_claims; c++) {
        const mb_rpt_lecture_series *f = &d->series[d->claims[c].fast];
        double b = atof(f->count) * (double)mb_dtype_bytes(f->dtype);
        if (per == 0 || b < per) per = b;
    }
    int64_t n = d->n;
    while ((double)n * per < floor_bytes && n < max_n) n *= 2;
    if ((double)n * per < floor_bytes) *capped = 1;
    return n;
}

const mb_rpt_demo *rpt_dtype_demo(void)
{
    for (int i = 0; i < MB_RPT_N_DEMOS; i++) {
        const mb_rpt_demo *d = &mb_rpt_lecture[i];
        for (int k = 1; k < d->n_series; k++)
            if (d->series[k].dtype != d->series[0].dtype) return d;
    }
    return NULL;
}

const mb_rpt_demo *rpt_recompute_demo(void)
{
    for (int i = 0; i < MB_RPT_N_DEMOS; i++)
        for (int k = 0; k < mb_rpt_lecture[i].n_series; k++)
            if (!strcmp(mb_rpt_lecture[i].series[k].plan, "recompute")) return &mb_rpt_lecture[i];
    return NULL;
}

const char *rpt_display(const char *variant)
{
    const mb_rpt_demo *d = mb_rpt_demo_of(variant);
    return d ? d->display : variant;
}

const char *rpt_lecture_count(const char *variant, const char *plan, mb_dtype dt)
{
    const mb_rpt_demo *d = mb_rpt_demo_of(variant);
    (void)dt; /* counts are in elements: the same in every dtype */
    for (int i = 0; d && i < d->n_series; i++)
        if (!strcmp(d->series[i].plan, plan)) return d->series[i].count;
    return NULL;
}

/* ---- variant definitions --------------------------------------------------- */

static int parse_def(const mb_rpt_vardef *v, mb_dtype dt, mb_graph **out, mb_err *err)
{
    if (!v->text) return mb_variant_load(v->name, dt, out, err);
    if (v->is_expr) return mb_parse_expr(v->text, dt, out, err);
    return mb_parse_variant(v->text, v->origin, dt, out, err);
}

static mb_rpt_vardef *push_def(mb_rpt_set *s)
{
    void *p = realloc(s->vars, (size_t)(s->n_vars + 1) * sizeof *s->vars);
    if (!p) return NULL;
    s->vars = p;
    mb_rpt_vardef *v = &s->vars[s->n_vars++];
    memset(v, 0, sizeof *v);
    v->file = -1;
    return v;
}

int rpt_add_embedded(mb_rpt_set *s, int file, int line_no, const char *name, int is_expr,
                     const char *line, mb_err *err)
{
    mb_rpt_vardef *v = NULL;
    for (int i = 0; i < s->n_vars; i++)
        if (s->vars[i].file == file && !strcmp(s->vars[i].name, name)) v = &s->vars[i];
    /* one text per variant: the last of two would win silently */
    if (v && (is_expr || v->is_expr))
        return mb_err_set(err, MB_EINPUT, "%s:%d: a second text of variant '%s' ('%s %s', the "
                          "first is on line %d): one variant_expr line, or variant_text lines, "
                          "per variant", s->files[file], line_no, name,
                          is_expr ? MB_MEAS_PROV_EXPR : MB_MEAS_PROV_VARIANT, name, v->line);
    if (!v) {
        if (!(v = push_def(s))) return mb_err_set(err, MB_ERUN, "out of memory");
        snprintf(v->name, sizeof v->name, "%s", name);
        v->is_expr = is_expr;
        v->file = file;
        v->line = line_no;
        const char *base = strrchr(s->files[file], '/');
        snprintf(v->origin, sizeof v->origin, "%s (variant %s)", base ? base + 1 : s->files[file],
                 name);
    }
    size_t old = v->text ? strlen(v->text) : 0, add = strlen(line);
    char *t = realloc(v->text, old + add + 2);
    if (!t) return mb_err_set(err, MB_ERUN, "out of memory");
    if (old) t[old++] = '\n';
    memcpy(t + old, line, add + 1);
    v->text = t;
    return MB_OK;
}

int mb_rpt_define_variant(mb_rpt_set *s, const char *arg, int is_expr, mb_err *err)
{
    mb_graph *g = NULL;
    int rc = is_expr ? mb_parse_expr(arg, MB_F32, &g, err) : mb_variant_load(arg, MB_F32, &g, err);
    if (rc) return rc;
    mb_rpt_vardef *v = push_def(s);
    if (!v) { mb_graph_free(g); return mb_err_set(err, MB_ERUN, "out of memory"); }
    snprintf(v->name, sizeof v->name, "%s", g->name);
    v->is_expr = is_expr;
    snprintf(v->origin, sizeof v->origin, "%s", is_expr ? "--expr" : arg);
    int builtin = !is_expr && !strchr(arg, '/') && !strstr(arg, ".mb");
    if (!builtin) {
        if (is_expr) {
            v->text = strdup(arg);
        } else {
            FILE *fp = fopen(g->path, "rb");
            if (fp) {
                fseek(fp, 0, SEEK_END);
                long sz = ftell(fp);
                rewind(fp);
                v->text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
                if (v->text) v->text[fread(v->text, 1, (size_t)sz, fp)] = '\0';
                fclose(fp);
            }
        }
        if (!v->text) {
            mb_graph_free(g);
            s->n_vars--;
            return mb_err_set(err, MB_ERUN, "%s: cannot read back", arg);
        }
    }
    mb_graph_free(g);
    return MB_OK;
}

int mb_rpt_load_variant(const mb_rpt_set *s, int file, const char *name, mb_dtype dt,
                        mb_graph **out, mb_err *err)
{
    const mb_rpt_vardef *best = NULL;
    int best_rank = 4;
    for (int i = 0; s && i < s->n_vars; i++) {
        const mb_rpt_vardef *v = &s->vars[i];
        if (strcmp(v->name, name) != 0) continue;
        /* the row's own CSV, then the command line, then any other CSV */
        int rank = v->file == file && file >= 0 ? 0 : v->file < 0 ? 1 : 2;
        if (rank < best_rank) { best = v; best_rank = rank; }
    }
    if (best) return parse_def(best, dt, out, err);
    if (!strncmp(name, "expr:", 5)) return mb_parse_expr(name + 5, dt, out, err);
    /* a name the data gives selects a built-in: it never names a file to open */
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') {
            char shown[160];
            mb_text_escape(name, shown, sizeof shown);
            return mb_err_set(err, MB_EINPUT, "variant '%s': not a variant name (a CSV's variant column "
                              "names a built-in variant, or one whose text the CSV carries or the command "
                              "line gives: report FILE.csv VARIANT.mb)", shown);
        }
    return mb_variant_load(name, dt, out, err);
}
