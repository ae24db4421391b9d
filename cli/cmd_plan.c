/* cmd_plan.c — `membound plan`: the optimal recompute plan of variants with a
 * backward pass against store and recompute, or (--frontier) the
 * memory-traffic frontier, as a table, CSV or JSON, and its figure's data.
 * Does not choose anything itself (model/plan_optimal.c, model/frontier.c). */
#include "cli_common.h"
#include "commands.h"
#include "model_args.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From the reports module when it is built (it needs GSL), NULL without it,
 * as membound.c's commands are: the figure drawn from its data file (the
 * figure table's "frontier" row). Without it the data is still written.
 * Declared here as report.h does: that header is not there without it. */
#pragma weak mb_rpt_draw_figure
int mb_rpt_draw_figure(const char *stem, const char *data, const char *image,
                       char *(*env)(const char *name), mb_err *err);

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound plan [VARIANT|FILE.mb|--expr EXPR ...] [options]\n"
            "\n"
            "For a variant with a backward pass, which forward tensors to save and which\n"
            "to recompute in the backward kernel, chosen as a minimum cut of the joint\n"
            "forward-backward graph: the optimal plan against store and recompute, or\n"
            "with --frontier the least traffic for each budget of saved bytes.\n"
            "With no VARIANT, every built-in variant that has a backward pass. Variant\n"
            "files, built-in names and --expr mix, in the order given; each name once.\n"
            "\n"
            "  --expr EXPR        an expression; add '\\nbackward' (a newline, then the word)\n"
            "                     for its backward pass, e.g. $'y = sin(x)\\nbackward';\n"
            "                     repeat it for several\n"
            "  --objective O      bytes (default): least traffic; time: least roofline time\n"
            "                     on --device (recomputing may cost more than it saves)\n"
            "  --frontier         the memory-traffic frontier instead of the three plans\n"
            "  --figure FILE      with --frontier: the figure (.png, .svg, .pdf) and its data\n"
            "                     beside it (FILE without extension + .dat)\n"
            "  --device LIST      device ids or INI specs, comma-separated, or 'all', for the\n"
            "                     time column; h100-sxm (--devices: the same)\n"
            "  --n N              elements per tensor; default: the variant's lecture size\n"
            "  --shape LIST       ROWSxCOLS shapes of a 2-D variant (4096x1024,64x2^22); a\n"
            "                     [rows, 1] row statistic is rows elements; default its 'shape'\n"
            "  --dims LIST        sizes of the variant's named dimensions: batch=8,seq=4096,\n"
            "                     dim=1024; default: its 'dims' line\n"
            "  --dtype LIST       f32 (default), bf16, f16, comma-separated: bf16,f32\n"
            "  --colsum HOW       written, partial or reread: a [cols] gradient's sum over\n"
            "                     the rows in the fused backward (membound model --help)\n"
            "  --plan LIST        of store, recompute, optimal (default: the three), in order;\n"
            "                     eager too\n"
            "  --json | --csv     machine-readable output\n"
            "  -h, --help         this help\n"
            "\n"
            "example: membound plan sigmoid3 --frontier --figure frontier.png\n"
            "         membound plan softmax_bwd --shape 4096x1024\n");
}

typedef struct {
    mb_model_args a;
    mb_objective obj;
    int frontier;
    const char *figure;
    mb_device dev;       /* the device being written (one of devs) */
    mb_device *devs;
    int n_devs;
} plan_opts;

/* Nesting shown of an unnamed tensor's expression; deeper is "...". */
#define LABEL_DEPTH 3

/* A forward tensor as the variant writes it, without spaces (a table
 * separates a set's tensors by spaces): its name, else its expression
 * over named tensors ("sigmoid(sigmoid(x))", "(a*b)"), cut to "..." past
 * LABEL_DEPTH calls. */
static void node_text(const mb_graph *g, int v, int depth, char *buf, size_t size)
{
    const mb_node *nd = &g->nodes[v];
    if (nd->name[0] || nd->op == MB_OP_INPUT) {
        snprintf(buf, size, "%s", nd->name[0] ? nd->name : "input");
        return;
    }
    if (depth >= LABEL_DEPTH) {
        snprintf(buf, size, "...");
        return;
    }
    char a[2][160] = {"", ""};
    int ar = mb_op_arity(nd->op);
    for (int k = 0; k < ar && k < 2; k++) {
        if (nd->arg[k] >= 0) node_text(g, nd->arg[k], depth + 1, a[k], sizeof a[k]);
        else snprintf(a[k], sizeof a[k], "%g", nd->scalar[k]);
    }
    static const struct { mb_op op; const char *sym; } infix[] = {
        {MB_OP_ADD, "+"}, {MB_OP_SUB, "-"}, {MB_OP_MUL, "*"}, {MB_OP_DIV, "/"}, {MB_OP_POW, "**"}};
    for (size_t i = 0; i < sizeof infix / sizeof infix[0] && ar == 2; i++)
        if (infix[i].op == nd->op) {
            snprintf(buf, size, "(%s%s%s)", a[0], infix[i].sym, a[1]);
            return;
        }
    if (nd->op == MB_OP_NEG) snprintf(buf, size, "-%s", a[0]);
    else if (ar == 2) snprintf(buf, size, "%s(%s,%s)", mb_op_name(nd->op), a[0], a[1]);
    else snprintf(buf, size, "%s(%s)", mb_op_name(nd->op), a[0]);
}


/* The i-th tensor of a set in graph order (a plan lists them by first use). */
static int nth_in_order(const mb_graph *g, const int *set, int n, int i)
{
    for (int v = 0; v < g->n_forward; v++)
        for (int j = 0; j < n; j++)
            if (set[j] == v && i-- == 0) return v;
    return -1;
}

static void set_text(const mb_graph *g, const int *set, int n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < size; i++) {
        char l[200];
        node_text(g, nth_in_order(g, set, n, i), 0, l, sizeof l);
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", l);
    }
}

static json_t *set_json(const mb_graph *g, const int *set, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char l[200];
        node_text(g, nth_in_order(g, set, n, i), 0, l, sizeof l);
        json_array_append_new(a, json_string(l));
    }
    return a;
}

/* One row: a plan, or a frontier point, costed on the device. */
typedef struct {
    const char *label;   /* plan name, or "frontier" */
    int64_t saved_bytes, traffic_bytes;
    double recompute_ops_pe, time_s;
    const int *saved;
    int n_saved;
} row;

static int cost(const mb_plan *p, mb_shape sh, const mb_device *d, row *r, mb_err *e)
{
    mb_estimate est;
    int rc = sh.rank == 2 ? mb_estimate_plan_shape(p, sh, d, &est, e)
                          : mb_estimate_plan(p, mb_shape_elems(sh), d, &est, e);
    if (rc) return rc;
    r->saved_bytes = est.saved_bytes;
    r->traffic_bytes = est.total.read_bytes + est.total.write_bytes;
    r->time_s = est.total.time_s;
    mb_estimate_free(&est);
    return MB_OK;
}

static void print_row(const plan_opts *o, const mb_graph *g, mb_shape sh, const row *r, json_t *out)
{
    int64_t n = mb_shape_elems(sh);
    char shape[48];
    mb_shape_format(sh, shape, sizeof shape);
    double per_elem = (double)r->traffic_bytes / (double)n;
    double tensors = per_elem / (double)mb_dtype_bytes(o->a.dtype);
    char set[1024];
    set_text(g, r->saved, r->n_saved, set, sizeof set);
    if (o->a.fmt == MB_FMT_CSV) {
        /* shape: last, empty for 1-D (as model --csv); n stays the element count */
        printf("%s,%s,%s,%lld,%s,%s,%lld,%lld,%.4g,%.6g,%s,%s\n", g->name, r->label, o->dev.name,
               (long long)n, mb_dtype_name(o->a.dtype), mb_objective_name(o->obj),
               (long long)r->saved_bytes, (long long)r->traffic_bytes, r->recompute_ops_pe, r->time_s, set,
               sh.rank == 2 ? shape : "");
    } else if (o->a.fmt == MB_FMT_JSON) {
        json_t *j = json_object();
        json_object_set_new(j, "variant", json_string(g->name));
        json_object_set_new(j, "plan", json_string(r->label));
        json_object_set_new(j, "n", json_integer((json_int_t)n));
        if (sh.rank == 2) json_object_set_new(j, "shape", json_string(shape));
        if (o->n_devs > 1) json_object_set_new(j, "device", json_string(o->dev.name));
        if (o->a.n_dtypes > 1) json_object_set_new(j, "dtype", json_string(mb_dtype_name(o->a.dtype)));
        json_object_set_new(j, "saved", set_json(g, r->saved, r->n_saved));
        json_object_set_new(j, "saved_bytes", json_integer((json_int_t)r->saved_bytes));
        json_object_set_new(j, "traffic_bytes", json_integer((json_int_t)r->traffic_bytes));
        json_object_set_new(j, "recompute_ops_per_elem", json_real(r->recompute_ops_pe));
        json_object_set_new(j, "time_s", json_real(r->time_s));
        json_array_append_new(out, j);
    } else {
        char sb[32], tb[32], ts[32];
        char name[64]; /* several dtypes: the row's after the name */
        snprintf(name, sizeof name, o->a.n_dtypes > 1 ? "%s (%s)" : "%s", g->name, mb_dtype_name(o->a.dtype));
        /* a name longer than the column pushes its row right, never cut */
        printf("%-18s %-10s %10s %10s %6.3gn %9.4g %10s  %s\n", name, r->label,
               mb_cli_fmt_bytes((double)r->saved_bytes, sb, sizeof sb),
               mb_cli_fmt_bytes((double)r->traffic_bytes, tb, sizeof tb), tensors, r->recompute_ops_pe,
               mb_cli_fmt_time(r->time_s, ts, sizeof ts), set);
    }
}

/* The table's line above a 2-D variant's rows: its shape. */
static void print_shape(const plan_opts *o, const mb_graph *g, mb_shape sh)
{
    char shape[48];
    mb_shape_format(sh, shape, sizeof shape);
    if (o->a.fmt == MB_FMT_TABLE && sh.rank == 2) printf("%s at %s:\n", g->name, shape);
}

static int three_plans(const plan_opts *o, const mb_graph *g, mb_shape n, json_t *out)
{
    print_shape(o, g, n);
    mb_err e;
    static const mb_plan_kind three[] = {MB_PLAN_STORE, MB_PLAN_RECOMPUTE, MB_PLAN_OPTIMAL};
    int np = o->a.plan_given ? o->a.n_plans : 3;
    for (int k = 0; k < np; k++) { /* --plan's order, else store, recompute, optimal */
        mb_plan_kind kind = o->a.plan_given ? o->a.plans[k] : three[k];
        mb_plan *p = NULL;
        int rc;
        if (kind != MB_PLAN_OPTIMAL) rc = mb_plan_build_on(g, kind, &o->dev, &p, &e);
        else rc = mb_plan_build_optimal_shape(g, o->obj, n, &o->dev, &p, &e);
        row r = {mb_plan_name(p ? p->kind : MB_PLAN_OPTIMAL), 0, 0, 0, 0, NULL, 0};
        if (!rc) rc = cost(p, n, &o->dev, &r, &e);
        if (rc) { mb_plan_free(p); return mb_cli_fail_err(rc, &e); }
        r.recompute_ops_pe = mb_plan_recompute_ops_pe(p, g);
        r.saved = p->saved;
        r.n_saved = p->n_saved;
        print_row(o, g, n, &r, out);
        mb_plan_free(p);
    }
    return 0;
}

/* A saved set as a reader says it, for the figure: a tensor by its name
 * ("x", "t"), else by what computes it ("sigmoid(..)"), the same twice
 * counted ("2 x sigmoid(..)"): short, where the table and JSON write each
 * tensor's whole expression (node_text). */
static void fig_set_text(const mb_graph *g, const int *set, int n, char *buf, size_t size)
{
    char l[16][MB_NAME_MAX + 8];
    int count[16], m = 0;
    for (int i = 0; i < n; i++) {
        const mb_node *nd = &g->nodes[nth_in_order(g, set, n, i)];
        char t[MB_NAME_MAX + 8];
        if (nd->name[0]) snprintf(t, sizeof t, "%s", nd->name);
        else snprintf(t, sizeof t, "%s(..)", mb_op_name(nd->op));
        int k = 0;
        while (k < m && strcmp(l[k], t)) k++;
        if (k == m && m < 16) { snprintf(l[m], sizeof l[m], "%s", t); count[m++] = 0; }
        if (k < m) count[k]++;
    }
    size_t len = 0;
    buf[0] = '\0';
    if (!n) snprintf(buf, size, "nothing");
    for (int k = 0; k < m && len + 1 < size; k++)
        len += (size_t)snprintf(buf + len, size - len, count[k] > 1 ? "%s%d x %s" : "%s%.0d%s",
                                k ? ", " : "", count[k] > 1 ? count[k] : 0, l[k]);
}

/* "2^{24}" when n is a power of two, else n. */
static const char *fig_n(char *buf, size_t size, int64_t n)
{
    int lg = 0;
    while (lg < 62 && ((int64_t)1 << lg) < n) lg++;
    if (((int64_t)1 << lg) == n) snprintf(buf, size, "2^{%d}", lg);
    else snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* One point of the figure: a plan costed by cost() (passes included, so
 * every point compares on one axis of traffic). */
typedef struct fig_point {
    double saved_mb, traffic_mb, per_elem, time_ms;
    char label[1100]; /* frontier: its saved set; a plan: its name */
} fig_point;

/* The frontier's points into pts (f->n_points of them). */
static int frontier_points(const plan_opts *o, const mb_graph *g, mb_shape sh, const mb_frontier *f,
                           fig_point *pts, mb_err *e)
{
    int rc = MB_OK;
    for (int i = 0; i < f->n_points && !rc; i++) {
        mb_plan *p = NULL;
        row r = {"frontier", 0, 0, 0, 0, NULL, 0};
        rc = mb_plan_build_saving(g, f->points[i].saved, f->points[i].n_saved, &p, e);
        if (!rc) rc = cost(p, sh, &o->dev, &r, e);
        mb_plan_free(p);
        fig_point *q = &pts[i];
        fig_set_text(g, f->points[i].saved, f->points[i].n_saved, q->label, sizeof q->label);
        q->saved_mb = (double)f->points[i].saved_bytes / 1e6;
        q->traffic_mb = (double)r.traffic_bytes / 1e6;
        q->per_elem = (double)r.traffic_bytes / (double)mb_shape_elems(sh);
        q->time_ms = r.time_s * 1e3;
    }
    return rc;
}

/* store, recompute and, at a 2-D shape, the time objective's plan where it
 * moves less than every frontier point (a row that does not fit on chip
 * makes recomputing a row statistic cost passes, which the cut does not
 * count) into pts; returns their count (0 and *rcp set on an error). */
static int plan_points(const plan_opts *o, const mb_graph *g, mb_shape sh, double least_mb, fig_point *pts,
                       int *rcp, mb_err *e)
{
    int n = 0;
    for (int k = 0; k < 3; k++) {
        if (k == 2 && sh.rank != 2) break;
        mb_plan *p = NULL;
        row r = {"", 0, 0, 0, 0, NULL, 0};
        int rc = k < 2 ? mb_plan_build(g, k ? MB_PLAN_RECOMPUTE : MB_PLAN_STORE, &p, e)
                       : mb_plan_build_optimal_shape(g, MB_OBJECTIVE_TIME, sh, &o->dev, &p, e);
        if (!rc) rc = cost(p, sh, &o->dev, &r, e);
        if (!rc && (k < 2 || (double)r.traffic_bytes / 1e6 < least_mb)) {
            fig_point *q = &pts[n++];
            snprintf(q->label, sizeof q->label, "%s", k < 2 ? mb_plan_name(p->kind) : "optimal(time)");
            q->saved_mb = (double)r.saved_bytes / 1e6;
            q->traffic_mb = (double)r.traffic_bytes / 1e6;
        }
        mb_plan_free(p);
        if (rc) { *rcp = rc; return 0; }
    }
    return n;
}

static int by_saved(const void *x, const void *y)
{
    const fig_point *a = x, *b = y;
    return (a->saved_mb > b->saved_mb) - (a->saved_mb < b->saved_mb);
}

/* The figure's data: block 0 metadata, block 1 the frontier (saved MB,
 * traffic MB, traffic per element, time ms, saved set and the plans it
 * equals), block 2 the plans (label, or "-" where a frontier point already
 * names it; saved MB, traffic MB), block 3 the least traffic of all of them
 * within each budget of memory (a step line): one metric on each axis, so no
 * point lies below the line. */
static void dat_blocks(FILE *fp, fig_point *fr, int nf, fig_point *pl, int np)
{
    /* a plan on a frontier point is named in its label: "= recompute" the
     * same point, "(store within 0.01%)" on both axes (layernorm_bwd's store
     * at 64x2^22 saves 512 bytes more than x, for the same traffic) */
    for (int j = 0; j < np; j++)
        for (int i = 0; i < nf && pl[j].label[0]; i++) {
            double ds = fabs(pl[j].saved_mb - fr[i].saved_mb), dt = fabs(pl[j].traffic_mb - fr[i].traffic_mb);
            if (ds > 1e-4 * fr[i].saved_mb || dt > 1e-4 * fr[i].traffic_mb) continue;
            size_t len = strlen(fr[i].label);
            snprintf(fr[i].label + len, sizeof fr[i].label - len, ds == 0 && dt == 0 ? " = %s" : " (%s within 0.01%%)",
                     pl[j].label);
            pl[j].label[0] = '\0';
        }
    for (int i = 0; i < nf; i++)
        fprintf(fp, "%.6g %.6g %.6g %.6g \"%s\"\n", fr[i].saved_mb, fr[i].traffic_mb, fr[i].per_elem, fr[i].time_ms,
                fr[i].label);
    fprintf(fp, "\n\n");
    for (int j = 0; j < np; j++)
        fprintf(fp, "%s %.6g %.6g\n", pl[j].label[0] ? pl[j].label : "-", pl[j].saved_mb, pl[j].traffic_mb);
    fprintf(fp, "\n\n");
    /* the envelope: the points by memory, each that lowers the least
     * traffic so far; it runs on to the largest point's memory */
    int n = nf + np;
    fig_point *all = malloc((size_t)n * sizeof *all);
    if (!all) return;
    memcpy(all, fr, (size_t)nf * sizeof *all);
    memcpy(all + nf, pl, (size_t)np * sizeof *all);
    qsort(all, (size_t)n, sizeof *all, by_saved);
    double least = INFINITY;
    for (int i = 0; i < n; i++)
        if (all[i].traffic_mb < least) {
            least = all[i].traffic_mb;
            fprintf(fp, "%.6g %.6g\n", all[i].saved_mb, least);
        }
    if (n) fprintf(fp, "%.6g %.6g\n", all[n - 1].saved_mb, least);
    free(all);
}

static int write_dat(const plan_opts *o, const mb_graph *g, mb_shape sh, const mb_frontier *f,
                     const char *path)
{
    char shape[48];
    mb_shape_format(sh, shape, sizeof shape);
    mb_outfile of;
    mb_err e;
    int rc = mb_outfile_open(&of, path, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    FILE *fp = of.fp;
    /* an unnamed --expr is named by its text, not "expr"; n as 2^k */
    char who[200], nb[32];
    snprintf(who, sizeof who, "%s", g->name);
    for (int i = 0; i < o->a.inputs.n; i++)
        if (o->a.inputs.v[i].is_expr && !strcmp(g->name, "expr"))
            snprintf(who, sizeof who, "%.190s", o->a.inputs.v[i].arg);
    who[strcspn(who, "\n")] = '\0'; /* the expression, not its "backward" line */
    for (char *c = who; *c; c++)
        if (*c == '"' || *c == '_' || *c == '@' || *c == '&' || *c == '~' || *c == '{' || *c == '}') *c = ' ';
    if (sh.rank == 2)
        fprintf(fp, "title \"%s: activation memory against traffic (%s, %s)\"\ndevice \"%s\"\n\n\n", who, shape,
                mb_dtype_name(o->a.dtype), o->dev.label);
    else
        fprintf(fp, "title \"%s: activation memory against traffic (n = %s, %s)\"\ndevice \"%s\"\n\n\n", who,
                fig_n(nb, sizeof nb, mb_shape_elems(sh)), mb_dtype_name(o->a.dtype), o->dev.label);
    fig_point *pts = calloc((size_t)f->n_points + 3, sizeof *pts);
    rc = pts ? frontier_points(o, g, sh, f, pts, &e) : mb_err_set(&e, MB_ERUN, "out of memory");
    double least_mb = INFINITY;
    for (int i = 0; !rc && i < f->n_points; i++) least_mb = fmin(least_mb, pts[i].traffic_mb);
    int np = rc ? 0 : plan_points(o, g, sh, least_mb, pts + f->n_points, &rc, &e);
    if (!rc) dat_blocks(fp, pts, f->n_points, pts + f->n_points, np);
    free(pts);
    if (rc) { mb_outfile_abort(&of); return mb_cli_fail_err(rc, &e); }
    if ((rc = mb_outfile_commit(&of, &e))) return mb_cli_fail_err(rc, &e);
    return 0;
}

static int render(const char *dat, const char *figure)
{
    if (!mb_rpt_draw_figure)
        return mb_cli_fail(1, "figure data written to %s; drawing it needs the reports module "
                           "(GSL): run gnuplot -c plots/frontier.gp %s %s", dat, dat, figure);
    mb_err e;
    /* the library reads no environment: it gets ours */
    int rc = mb_rpt_draw_figure("frontier", dat, figure, getenv, &e);
    return rc ? mb_cli_fail_err(rc, &e) : 0;
}

static int frontier(const plan_opts *o, const mb_graph *g, mb_shape n, json_t *out)
{
    mb_frontier f;
    mb_err e;
    int rc = mb_frontier_build_shape(g, n, &f, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    print_shape(o, g, n);
    for (int i = 0; i < f.n_points && !rc; i++) {
        mb_plan *p = NULL;
        row r = {"frontier", 0, 0, f.points[i].recompute_ops_pe, 0, f.points[i].saved, f.points[i].n_saved};
        rc = mb_plan_build_saving(g, f.points[i].saved, f.points[i].n_saved, &p, &e);
        if (!rc) rc = cost(p, n, &o->dev, &r, &e);
        mb_plan_free(p);
        if (rc) { rc = mb_cli_fail_err(rc, &e); break; }
        print_row(o, g, n, &r, out);
    }
    if (!rc && o->figure) {
        char dat[4096];
        const char *dot = strrchr(o->figure, '.');
        size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - o->figure) : strlen(o->figure);
        snprintf(dat, sizeof dat, "%.*s.dat", (int)stem, o->figure);
        rc = write_dat(o, g, n, &f, dat);
        if (!rc) rc = render(dat, o->figure);
    }
    mb_frontier_free(&f);
    return rc;
}

static int parse_opts(plan_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"expr", required_argument, 0, 'e'}, {"objective", required_argument, 0, 'o'},
        {"frontier", no_argument, 0, 'f'}, {"figure", required_argument, 0, 'F'},
        {"device", required_argument, 0, 'd'}, {"devices", required_argument, 0, 'd'},
        {"n", required_argument, 0, 'n'}, {"shape", required_argument, 0, 'S'}, {"dims", required_argument, 0, MB_OPT_DIMS},
        {"colsum", required_argument, 0, MB_OPT_COLSUM},
        {"dtype", required_argument, 0, 't'}, {"plan", required_argument, 0, 'p'},
        {"json", no_argument, 0, 'J'},
        {"csv", no_argument, 0, 'C'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *device = "h100-sxm";
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:he:o:fF:d:n:S:t:p:JC", opts, NULL)) != -1) {
        switch (c) {
        case 1:
        case 'e':
        case 't':
        case 'p':
        case 'S':
        case MB_OPT_DIMS:
        case MB_OPT_COLSUM:
            if ((rc = mb_model_args_option(&o->a, c, optarg))) return rc;
            break;
        case 'd': device = optarg; break;
        case 'f': o->frontier = 1; break;
        case 'F': o->figure = optarg; break;
        case 'o':
            if (mb_objective_parse(optarg, &o->obj))
                return mb_cli_fail(2, "unknown objective '%s' (objectives: bytes, time)", optarg);
            break;
        case 'n': {
            int64_t n;
            if ((rc = mb_cli_size(optarg, &n))) return rc;
            free(o->a.sizes);
            if (!(o->a.sizes = malloc(sizeof *o->a.sizes))) return mb_cli_fail(1, "out of memory");
            o->a.n_sizes = 1;
            o->a.sizes[0] = mb_shape_1d(n); /* backward plans are elementwise: 1-D */
            break;
        }
        case 'J':
        case 'C':
            if (o->a.fmt != MB_FMT_TABLE) return mb_cli_fail(2, "give one of --json and --csv");
            o->a.fmt = c == 'J' ? MB_FMT_JSON : MB_FMT_CSV;
            break;
        case 'h': usage(stdout); return -1;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "plan");
        }
    }
    if (o->figure && !o->frontier) return mb_cli_fail(2, "--figure draws the frontier: add --frontier");
    if (o->frontier && o->a.plan_given)
        return mb_cli_fail(2, "--frontier lists the least traffic for each memory budget: --plan does not apply");
    if (o->frontier && o->obj == MB_OBJECTIVE_TIME)
        return mb_cli_fail(2, "--frontier lists traffic for each memory budget: --objective does not apply");
    if ((rc = mb_cli_devices(device, &o->devs, &o->n_devs))) return rc;
    o->dev = o->devs[0];
    return 0;
}

/* The header of the table or CSV, once (the table's: per device). */
static void print_head(const plan_opts *o)
{
    if (o->a.fmt == MB_FMT_CSV)
        printf("variant,plan,device,n,dtype,objective,saved_bytes,traffic_bytes,recompute_ops_per_elem,"
               "time_s,saved,shape\n");
    else if (o->a.fmt == MB_FMT_TABLE)
        printf("device %s, objective %s%s\n\n%-18s %-10s %10s %10s %7s %9s %10s  %s\n", o->dev.name,
               mb_objective_name(o->obj), o->frontier ? ", frontier: least traffic for each saved budget" : "",
               "variant", "plan", "saved", "traffic", "count", "recomp/el", "time", "saved set");
}

static void plan_opts_free(plan_opts *o)
{
    free(o->devs);
    mb_model_args_free(&o->a);
}

int mb_cmd_plan(int argc, char **argv)
{
    plan_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts(&o, argc, argv);
    if (rc) { plan_opts_free(&o); return rc < 0 ? 0 : rc; }
    if (!mb_plan_optimal_available()) {
        plan_opts_free(&o);
        return mb_cli_fail(2, "plan: the optimal plan and the frontier need igraph (libigraph-dev), "
                           "which this build lacks: install it and rebuild");
    }
    int named = o.a.inputs.n > 0;
    if ((rc = mb_model_args_load(&o.a))) { plan_opts_free(&o); return rc; }
    for (int i = 0; i < o.a.n_graphs && named; i++)
        if (!o.a.graphs[i]->has_backward) {
            rc = mb_cli_fail(2, "variant '%s' has no backward pass: nothing to save or recompute "
                             "(add 'backward' to it)", o.a.graphs[i]->name);
            plan_opts_free(&o);
            return rc;
        }
    if (o.figure && (o.a.n_graphs != 1 || o.n_devs != 1)) {
        plan_opts_free(&o);
        return mb_cli_fail(2, "--figure draws one variant's frontier on one device at one dtype: name one "
                           "variant, one device and one dtype");
    }
    mb_model_args_warn_memory(&o.a, o.devs, o.n_devs);
    json_t *out = json_array();
    mb_dtype first_dtype = o.a.dtype;
    for (int d = 0; d < o.n_devs && !rc; d++) {
        o.dev = o.devs[d];
        if (o.a.fmt == MB_FMT_TABLE && d) putchar('\n');
        if (d == 0 || o.a.fmt == MB_FMT_TABLE) print_head(&o);
        for (int i = 0; i < o.a.n_graphs && !rc; i++) {
            const mb_graph *g = o.a.graphs[i];
            if (!g->has_backward) continue;
            o.a.dtype = mb_model_args_dtype(&o.a, i); /* the rows' dtype */
            mb_shape one;
            const mb_shape *sizes;
            int ns = mb_model_args_sizes(&o.a, g, &sizes, &one);
            if (o.figure) ns = 1; /* one figure: the first shape */
            for (int s = 0; s < ns && !rc; s++)
                rc = o.frontier ? frontier(&o, g, sizes[s], out) : three_plans(&o, g, sizes[s], out);
        }
    }
    o.a.dtype = first_dtype;
    if (!rc && o.a.fmt == MB_FMT_JSON) {
        json_t *root = json_object();
        /* several devices or dtypes: null here, each row has its own */
        json_object_set_new(root, "device", o.n_devs == 1 ? json_string(o.devs[0].name) : json_null());
        json_object_set_new(root, "dtype", o.a.n_dtypes == 1 ? json_string(mb_dtype_name(o.a.dtype)) : json_null());
        json_object_set_new(root, "objective", json_string(mb_objective_name(o.obj)));
        json_object_set_new(root, o.frontier ? "frontier" : "results", json_incref(out));
        char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
        puts(s);
        free(s);
        json_decref(root);
    }
    json_decref(out);
    plan_opts_free(&o);
    return rc;
}
