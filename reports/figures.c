/* figures.c — the table of figures (a row each: its file stem and script,
 * how often a report draws it, when it is wanted, which writer makes its
 * data) and the entry points that walk it. Writes no data itself (fig_*.c
 * do) and draws nothing: the look of every figure lives in plots/NAME.gp. */
#include "fig_int.h"

#include <stdio.h>
#include <string.h>

/* ---- the table of figures ------------------------------------------------- */

/* What a figure is drawn from: the set (measured rows, or variant
 * definitions for the model's figures: gi and devi -1), a group or device
 * of it, the series, the what-if devices. */
typedef struct fig_args {
    const mb_rpt_set *s;
    int gi, devi;          /* the group / device drawn; -1: the model's figures */
    const mb_device *d;    /* the model device */
    const rpt_series *se;  /* the what-if's series */
    int ns;
    const mb_device *whatif;
    int n_whatif;
} fig_args;

static int draw_bytes(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_bytes(fc, name, a->s, a->gi, a->d);
}

static int draw_time(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_time(fc, name, a->s, a->gi, a->d);
}

static int wants_speedup(const fig_args *a) { return rpt_speedup_wanted(a->s, a->gi); }

static int draw_speedup(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_speedup(fc, name, a->s, a->gi, a->d);
}

static int draw_residuals(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_residuals(fc, name, a->s, a->gi);
}

static int draw_roofline(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_roofline(fc, name, a->s, a->devi, a->d);
}

static int draw_whatif(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_whatif(fc, name, a->s, a->se, a->ns, a->whatif, a->n_whatif);
}

static int draw_recompute(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_recompute(fc, name, a->s, a->gi, a->d);
}

/* The recomputation figure needs its demo's variant: among the model's
 * series, or among the group's rows. */
static int wants_recompute(const fig_args *a)
{
    const mb_rpt_demo *dm = rpt_recompute_demo();
    if (!dm) return 0;
    if (a->gi < 0) {
        for (int k = 0; k < a->ns; k++)
            if (!strcmp(a->se[k].variant, dm->variant)) return 1;
        return 0;
    }
    for (int i = 0; i < a->s->n_rows; i++)
        if (a->s->rows[i].group == a->gi && !strcmp(a->s->rows[i].variant, dm->variant) &&
            rpt_row_wanted(a->s, &a->s->rows[i]))
            return 1;
    return 0;
}

/* Bytes, time against n and the what-if draw 1-D rows: wanted for the
 * model's figures and where a 1-D row was measured (in the group, for the
 * per-group ones) (2-D rows are on the knee figure). */
static int wants_1d(const fig_args *a)
{
    if (!a->s || a->s->n_rows == 0) { /* the model's: a series of a variant without row ops */
        for (int k = 0; k < a->ns; k++)
            if (!rpt_has_row_ops(a->s, a->se[k].variant)) return 1;
        return a->ns == 0;
    }
    for (int i = 0; i < a->s->n_rows; i++)
        if ((a->gi < 0 || a->s->rows[i].group == a->gi) && a->s->rows[i].cols == 0 &&
            rpt_row_wanted(a->s, &a->s->rows[i]))
            return 1;
    return 0;
}

/* The knee figure (fig_knee.c): wanted when a variant with row operations is drawn. */
static int wants_knee(const fig_args *a) { return rpt_knee_variant(a->s, a->se, a->ns) != NULL; }

static int draw_knee(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_knee(fc, name, a->s, rpt_knee_variant(a->s, a->se, a->ns), a->d);
}

/* The model's error across devices (fig_error.c): wanted when the rows
 * hold more than one device x backend. */
static int wants_devices(const fig_args *a) { return a->s && a->gi < 0 && a->s->n_groups > 1; }

static int draw_model_error(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_model_error(fc, name, a->s);
}

typedef enum fig_scope {
    FIG_PER_GROUP,  /* one per device x backend of the measured rows */
    FIG_PER_DEVICE, /* one per device, every backend's points on it */
    FIG_ONCE,       /* one for the whole report */
    FIG_GIVEN       /* drawn from a data file its caller writes (mb_rpt_draw_figure:
                       membound plan --frontier --figure), never by a report or
                       the model's figures */
} fig_scope;

/* One figure: its file stem (and plots/STEM.gp's), how often a report of
 * measurements draws it, whether the model-only figures have it, when it
 * is wanted (NULL: always) and what writes its data (NULL: its caller,
 * FIG_GIVEN) and has it drawn. A report draws the
 * per-group figures of each group in this order, then the per-device ones,
 * then the others; the model's figures are drawn in this order. */
typedef struct fig_kind {
    const char *stem;
    fig_scope scope;
    int in_model;
    int (*wanted)(const fig_args *a);
    int (*draw)(rpt_fig_ctx *fc, const char *name, const fig_args *a);
} fig_kind;

static const fig_kind fig_kinds[] = {
    {"bytes", FIG_PER_GROUP, 1, wants_1d, draw_bytes},
    {"time_vs_n", FIG_PER_GROUP, 1, wants_1d, draw_time},
    {"speedup", FIG_PER_GROUP, 0, wants_speedup, draw_speedup},
    {"residuals", FIG_PER_GROUP, 0, NULL, draw_residuals},
    {"roofline", FIG_PER_DEVICE, 1, NULL, draw_roofline},
    {"whatif", FIG_ONCE, 1, wants_1d, draw_whatif},
    {"recompute", FIG_PER_GROUP, 1, wants_recompute, draw_recompute},
    {"knee", FIG_ONCE, 1, wants_knee, draw_knee},
    {"model_error", FIG_ONCE, 0, wants_devices, draw_model_error},
    {"frontier", FIG_GIVEN, 0, NULL, NULL},
    /* membound attention --figures */
    {"attn_seq", FIG_GIVEN, 0, NULL, NULL},
    {"attn_tflops", FIG_GIVEN, 0, NULL, NULL},
    {"attn_frontier", FIG_GIVEN, 0, NULL, NULL},
    {"attn_oom", FIG_GIVEN, 0, NULL, NULL},
    {"mlp_kernels", FIG_GIVEN, 0, NULL, NULL},  /* membound mlp --figures */
    {"mlp_frontier", FIG_GIVEN, 0, NULL, NULL},
    {"mlp_roofline", FIG_GIVEN, 0, NULL, NULL},
};
#define N_FIG_KINDS ((int)(sizeof fig_kinds / sizeof fig_kinds[0]))

/* Draws the kinds of scope (in_model: the model's figures, any scope) with
 * the file stem's suffix suf. */
static int draw_kinds(rpt_fig_ctx *fc, int model, fig_scope scope, const char *suf, const fig_args *a)
{
    int rc = 0;
    char name[160];
    for (int k = 0; k < N_FIG_KINDS && !rc; k++) {
        const fig_kind *f = &fig_kinds[k];
        if (model ? !f->in_model : f->scope != scope) continue;
        if (f->wanted && !f->wanted(a)) continue;
        snprintf(name, sizeof name, "%s%s", f->stem, suf);
        rc = f->draw(fc, name, a);
    }
    return rc;
}

/* ---- entry points --------------------------------------------------------- */

int mb_rpt_model_figures(const mb_rpt_set *defs, const mb_device *d, const mb_device *whatif,
                         int n_whatif, const char *dir, unsigned formats, int render,
                         mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, defs ? &defs->look : NULL, out, err);
    if (rc) return rc;
    rpt_series se[MAX_SERIES];
    int ns = rpt_model_series(defs, se, MAX_SERIES);
    fig_args a = {defs, -1, -1, d, se, ns, whatif, n_whatif};
    rc = draw_kinds(&fc, 1, FIG_ONCE, "", &a);
    return rpt_fig_end(&fc, rc);
}

/* A file-name-safe suffix for a group or device. */
static void suffix(char *buf, size_t size, const char *a, const char *b)
{
    snprintf(buf, size, "_%s%s%s", a, b ? "-" : "", b ? b : "");
    for (char *p = buf + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            *p = '-';
}

/* One roofline per device (with every backend's points on it), and the
 * other per-device kinds. */
static int draw_devices(rpt_fig_ctx *fc, const mb_rpt_set *s)
{
    char suf[128];
    int rc = 0, ndev = 0;
    for (int k = 0; k < s->n_devices; k++)
        for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == k) { ndev++; break; }
    for (int di = 0; di < s->n_devices && !rc; di++) {
        int used = 0;
        for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == di) used = 1;
        if (!used) continue;
        if (ndev > 1) suffix(suf, sizeof suf, s->devices[di].name, NULL);
        else suf[0] = '\0';
        fig_args a = {s, -1, di, &s->devices[di], NULL, 0, NULL, 0};
        rc = draw_kinds(fc, 0, FIG_PER_DEVICE, suf, &a);
    }
    return rc;
}

int mb_rpt_set_figures(const mb_rpt_set *s, const char *dir, unsigned formats, int render,
                       mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, &s->look, out, err);
    if (rc) return rc;
    char suf[128];
    for (int g = 0; g < s->n_groups && !rc; g++) {
        if (s->n_groups > 1) suffix(suf, sizeof suf, s->groups[g].device, s->groups[g].backend);
        else suf[0] = '\0';
        fig_args a = {s, g, s->groups[g].dev, &s->devices[s->groups[g].dev], NULL, 0, NULL, 0};
        rc = draw_kinds(&fc, 0, FIG_PER_GROUP, suf, &a);
    }
    if (!rc) rc = draw_devices(&fc, s);
    /* the what-if of every variant measured */
    rpt_series se[MAX_SERIES];
    int ns = 0;
    for (int g = 0; g < s->n_groups; g++) {
        rpt_series sg[MAX_SERIES];
        int m = rpt_row_series(s, g, -1, sg, MAX_SERIES);
        for (int k = 0; k < m; k++)
            ns = rpt_push_series(se, ns, MAX_SERIES, sg[k].variant, sg[k].plan, sg[k].dtype, sg[k].n);
    }
    fig_args a = {s, -1, -1, NULL, se, ns, NULL, 0};
    if (!rc) rc = draw_kinds(&fc, 0, FIG_ONCE, "", &a);
    return rpt_fig_end(&fc, rc);
}

int mb_rpt_draw_figure(const char *stem, const char *data, const char *image,
                       char *(*env)(const char *name), mb_err *err)
{
    int k = 0;
    while (k < N_FIG_KINDS && strcmp(fig_kinds[k].stem, stem)) k++;
    if (k == N_FIG_KINDS || fig_kinds[k].scope != FIG_GIVEN)
        return mb_err_set(err, MB_EINPUT, "figure '%s': not one drawn from its caller's data", stem);
    mb_rpt_set_env(env);
    return rpt_draw_given(fig_kinds[k].stem, data, image, err);
}
