/* model_out.c — renderings of model results: table, CSV, JSON (jansson). */
#include "model_out.h"

#include "cli_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mb_model_row_make(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                      const mb_device *dev, mb_dtype dtype, mb_err *err)
{
    return mb_model_row_make_fw(row, g, k, shape, dev, dtype, MB_FW_NONE, err);
}

int mb_model_row_make_fw(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                         const mb_device *dev, mb_dtype dtype, mb_framework fw, mb_err *err)
{
    mb_timing t = {.fw = fw};
    return mb_model_row_make_timed(row, g, k, shape, dev, dtype, &t, err);
}

int mb_model_row_make_timed(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                            const mb_device *dev, mb_dtype dtype, const mb_timing *t, mb_err *err)
{
    shape = mb_graph_shape_at(g, shape); /* a loss over a 2-D tensor: its n elements */
    const int64_t n = mb_shape_elems(shape);
    const mb_framework fw = t->fw;
    const int gpu = strcmp(dev->kind, "cpu") != 0;
    if (fw != MB_FW_NONE && shape.rank == 2 && !gpu)
        return mb_err_set(err, MB_EINPUT, "--framework %s models 1-D sizes only on a CPU, not a ROWSxCOLS shape",
                          mb_framework_name(fw));
    memset(row, 0, sizeof *row);
    mb_plan *p;
    int rc = mb_plan_build_on(g, k, dev, &p, err); /* the eager kernels the device's framework runs */
    if (rc) return rc;
    row->fw = fw;
    row->phase = t->phase;
    row->host = fw == MB_FW_PYTORCH && gpu;
    rc = fw == MB_FW_NONE && t->phase == MB_PHASE_ALL ? mb_estimate_plan_shape(p, shape, dev, &row->est, err)
                                                      : mb_estimate_plan_timed(p, shape, dev, t, &row->est, err);
    if (rc) { mb_plan_free(p); return rc; }
    /* A figure that is not finite is refused here, before any rendering:
     * JSON cannot hold inf or NaN (jansson refuses them, and a key went
     * missing), a table or CSV would print "inf". The device ranges keep
     * every figure finite; this is the loud failure if they ever do not. */
    const char *bad = NULL;
    double v = 0;
    for (int j = -1; j < row->est.n_kernels && !bad; j++) {
        const mb_cost *c = j < 0 ? &row->est.total : &row->est.per_kernel[j];
        const struct { const char *name; double v; } f[] = {
            {"time_s", c->time_s}, {"mem_s", c->mem_s}, {"compute_s", c->compute_s},
            {"launch_s", c->launch_s}, {"flops", c->flops}, {"sfu_ops", c->sfu_ops},
            {"alloc_s", c->alloc_s}};
        for (size_t i = 0; i < sizeof f / sizeof f[0] && !bad; i++)
            if (!isfinite(f[i].v)) bad = f[i].name, v = f[i].v;
    }
    if (!bad && !isfinite(row->est.bandwidth_gbs)) bad = "bandwidth_gbs", v = row->est.bandwidth_gbs;
    if (bad) {
        mb_err_set(err, MB_EINPUT, "%s, plan %s, n = %lld on device '%s': the model's %s is %g, "
                   "not a finite number (check the device's figures)", g->name, mb_plan_name(k),
                   (long long)n, dev->name, bad, v);
        mb_estimate_free(&row->est);
        mb_plan_free(p);
        return MB_EINPUT;
    }
    row->g = g;
    row->plan = p;
    row->dev = dev;
    row->dtype = dtype;
    row->n = n;
    row->shape = shape;
    return MB_OK;
}

void mb_model_row_free(mb_model_row *row)
{
    mb_estimate_free(&row->est);
    mb_plan_free((mb_plan *)row->plan);
    row->plan = NULL;
}

double mb_model_row_elements(const mb_model_row *r)
{
    const mb_graph *g = r->plan->g;
    double elems = 0, n = (double)mb_shape_elems(r->shape);
    for (int k = 0; k < r->plan->n_kernels; k++) {
        const mb_kernel *K = &r->plan->kernels[k];
        int multi = r->est.per_kernel && r->est.per_kernel[k].passes > 1;
        for (int t = 0; t < K->n_reads; t++)
            elems += (double)mb_tensor_elems_at(g, K->reads[t], r->shape) *
                     (multi ? mb_kernel_read_passes_on(g, K, t, r->dev, r->fw) : 1);
        for (int t = 0; t < K->n_writes; t++) elems += (double)mb_tensor_elems_at(g, K->writes[t], r->shape);
    }
    return n > 0 ? elems / n : 0;
}

/* 1 when kernel K, one pass here, would not hold its row in r's device's
 * registers alone (mb_kernel_register_max_cols): a Triton program a row
 * spills, which the time does not count */
static int register_spills(const mb_model_row *r, const mb_kernel *K)
{
    const int64_t cols = r->shape.cols > 0 ? r->shape.cols : 1;
    return r->dev->register_kib > 0 && cols > mb_kernel_register_max_cols(r->plan->g, K, r->dev);
}

void mb_model_knee_lines(FILE *fp, const mb_model_row *r)
{
    for (int k = 0; k < r->plan->n_kernels; k++) {
        const mb_kernel *K = &r->plan->kernels[k];
        if (K->passes <= 1 && !mb_kernel_reread_rows(K, r->dev, r->fw)) continue;
        int64_t cols = mb_kernel_onepass_max_cols(K, r->dev);
        char shape[48];
        mb_shape_format(r->shape, shape, sizeof shape);
        if (mb_kernel_reread_rows(K, r->dev, r->fw)) {
            const mb_cost *c = &r->est.per_kernel[k];
            fprintf(fp, "  %s %s, kernel %s: PyTorch's native kernel holds no row on chip: a block of %d threads "
                    "reads each row twice (statistics, then output); at %s: %lld rows in flight, re-reads %s\n",
                    r->g->name, mb_plan_name(r->plan->kind), K->name, MB_TORCH_NORM_THREADS, shape,
                    (long long)c->rows_in_flight, c->rereads_cached ? "hit the cache" : "from DRAM");
            continue;
        }
        if (K->passes <= 1) continue;
        if (cols == 0)
            fprintf(fp, "  %s %s, kernel %s: %s gives no on-chip size: %d passes over every row\n",
                    r->g->name, mb_plan_name(r->plan->kind), K->name, r->dev->name, K->passes);
        else {
            const mb_cost *c = &r->est.per_kernel[k];
            char how[96] = "one pass";
            if (c->passes > 1)
                snprintf(how, sizeof how, "multi-pass, %lld rows in flight, re-reads %s", (long long)c->rows_in_flight,
                         c->rereads_cached ? "hit the cache" : "from DRAM");
            fprintf(fp, "  %s %s, kernel %s: one pass up to rows of %lld elements on %s (%.0f KiB on chip, "
                    "%.0f B per column), %d passes beyond; at %s: %s\n", r->g->name, mb_plan_name(r->plan->kind),
                    K->name, (long long)cols, r->dev->name, r->dev->onchip_kib, K->live_bytes_per_col, K->passes,
                    shape, how);
            if (c->passes <= 1 && register_spills(r, K))
                fprintf(fp, "    (held in registers alone, as a Triton program a row holds it, f32: %.0f B per column x "
                        "%lld > %s's %.0f KiB of registers: such a kernel spills, a cost this time does not count; "
                        "up to %lld columns)\n",
                        mb_kernel_register_bytes_per_col(r->plan->g, K), (long long)r->shape.cols, r->dev->name,
                        r->dev->register_kib, (long long)mb_kernel_register_max_cols(r->plan->g, K, r->dev));
        }
    }
    /* the kernels on PyTorch's unrolled casting loop (docs/model.md, "A
     * casting eager kernel"): the table's times carry the ratio */
    int n_cast = 0;
    double lo = 0, hi = 0;
    char names[160] = "";
    size_t len = 0;
    for (int k = 0; k < r->plan->n_kernels; k++) {
        const double x = r->est.per_kernel[k].cast_loop;
        if (!(x > 0)) continue;
        lo = n_cast ? fmin(lo, x) : x;
        hi = n_cast ? fmax(hi, x) : x;
        if (len + 1 < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", n_cast ? ", " : "", r->plan->kernels[k].name);
        n_cast++;
    }
    if (n_cast) {
        char ratio[48];
        if (hi - lo < 0.005) snprintf(ratio, sizeof ratio, "%.2fx", hi);
        else snprintf(ratio, sizeof ratio, "%.2f-%.2fx", lo, hi);
        const int many = n_cast > 1;
        fprintf(fp, "  %s %s: %d kernel%s %s another dtype than %s in (%s%s): PyTorch's unrolled casting loop, "
                "memory time %s (pytorch/pytorch#195542's A100 ratio to the vectorized loop)\n", r->g->name,
                mb_plan_name(r->plan->kind), n_cast, many ? "s" : "", many ? "read" : "reads",
                many ? "they compute" : "it computes", names, len + 1 >= sizeof names ? ", ..." : "", ratio);
    }
}

const char *mb_model_row_dtype(const mb_model_row *r)
{
    const mb_graph *g = r->g;
    for (int k = 1; k < g->n_inputs; k++)
        if (g->nodes[g->inputs[k]].dtype != g->nodes[g->inputs[0]].dtype) return "mixed";
    return g->n_inputs ? mb_dtype_name(g->nodes[g->inputs[0]].dtype) : mb_dtype_name(r->dtype);
}

void mb_model_table_header(FILE *fp, int with_device)
{
    if (with_device) fprintf(fp, "%-16s ", "device");
    fprintf(fp, "%-16s %-10s %-5s %11s %7s %11s %11s %8s %11s %11s %10s %11s %-8s\n", "variant",
            "plan", "dtype", "n", "kernels", "read MB", "write MB", "traffic", "DRAM rd MB",
            "DRAM wr MB", "saved MB", "time", "bound");
}

void mb_model_table_row(FILE *fp, const mb_model_row *r, int with_device, int per_kernel)
{
    const mb_cost *t = &r->est.total;
    if (with_device) fprintf(fp, "%-16s ", r->dev->name);
    char traffic[32], tm[32], size[48];
    snprintf(traffic, sizeof traffic, "%.2fn", mb_model_row_elements(r));
    mb_shape_format(r->shape, size, sizeof size);
    fprintf(fp, "%-16s %-10s %-5s %11s %7d %11.3f %11.3f %8s %11.3f %11.3f %10.3f %11s %-8s\n",
            r->g->name, mb_plan_name(r->plan->kind), mb_model_row_dtype(r), size,
            r->plan->n_kernels, t->read_bytes / 1e6, t->write_bytes / 1e6, traffic,
            t->dram_read_bytes / 1e6, t->dram_write_bytes / 1e6, r->est.saved_bytes / 1e6,
            mb_cli_fmt_time(t->time_s, tm, sizeof tm),
            r->host && t->waits_on_host ? "host" : mb_bound_name(t->bound));
    if (!per_kernel) return;
    for (int k = 0; k < r->plan->n_kernels; k++) {
        const mb_cost *c = &r->est.per_kernel[k];
        const mb_kernel *K = &r->plan->kernels[k];
        if (with_device) fprintf(fp, "%-16s ", "");
        fprintf(fp, "  %-14s %-14.14s %-1s %11s %7s %11.3f %11.3f %8s %11.3f %11.3f %10s %11s %-8s\n",
                "", K->name, "", "", "", c->read_bytes / 1e6, c->write_bytes / 1e6, "",
                c->dram_read_bytes / 1e6, c->dram_write_bytes / 1e6, "",
                mb_cli_fmt_time(c->time_s, tm, sizeof tm),
                !c->timed ? "untimed" : r->host && c->waits_on_host ? "host" : mb_bound_name(c->bound));
    }
}

void mb_model_csv_header(FILE *fp, const char *more)
{
    fprintf(fp, "device,variant,plan,dtype,n,kernels,read_bytes,write_bytes,dram_read_bytes,"
                "dram_write_bytes,saved_bytes,flops,sfu_ops,time_s,mem_s,compute_s,launch_s,bound,"
                "bandwidth_gbs,bandwidth_source,shape%s\n", more ? more : "");
}

/* A name as a CSV field: quoted (RFC 4180) when it holds a comma or quote. */
static void csv_name(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
    } else {
        fputc('"', fp);
        for (; *s; s++) {
            if (*s == '"') fputc('"', fp);
            fputc(*s == '\n' || *s == '\r' ? ' ' : *s, fp);
        }
        fputc('"', fp);
    }
    fputc(',', fp);
}

void mb_model_csv_row(FILE *fp, const mb_model_row *r, const char *more)
{
    const mb_cost *t = &r->est.total;
    csv_name(fp, r->dev->name);
    char shape[48] = "";
    if (r->shape.rank == 2) mb_shape_format(r->shape, shape, sizeof shape);
    fprintf(fp, "%s,%s,%s,%lld,%d,%lld,%lld,%lld,%lld,%lld,%.17g,%.17g,%.9g,%.9g,%.9g,%.9g,%s,%.6g,%s,%s%s\n",
            r->g->name, mb_plan_name(r->plan->kind), mb_model_row_dtype(r),
            (long long)r->n, r->plan->n_kernels, (long long)t->read_bytes, (long long)t->write_bytes,
            (long long)t->dram_read_bytes, (long long)t->dram_write_bytes, (long long)r->est.saved_bytes,
            t->flops, t->sfu_ops, t->time_s, t->mem_s, t->compute_s, t->launch_s,
            mb_bound_name(t->bound), r->est.bandwidth_gbs, r->est.bandwidth_source, shape, more ? more : "");
}

/* A cost's keys; with a framework also its "alloc_s" (first touch); with
 * the host's timeline its "host_s", "start_s" (kernels) and "waits_on". */
static json_t *cost_json(const mb_cost *c, mb_framework fw, int host, int kernel)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:s}",
                          "read_bytes", (json_int_t)c->read_bytes, "write_bytes", (json_int_t)c->write_bytes,
                          "dram_read_bytes", (json_int_t)c->dram_read_bytes, "dram_write_bytes",
                          (json_int_t)c->dram_write_bytes, "flops", c->flops, "sfu_ops", c->sfu_ops,
                          "time_s", c->time_s, "mem_s", c->mem_s, "compute_s", c->compute_s, "launch_s",
                          c->launch_s, "bound", mb_bound_name(c->bound));
    if (o && fw != MB_FW_NONE && json_object_set_new(o, "alloc_s", json_real(c->alloc_s)) != 0) {
        json_decref(o);
        return NULL;
    }
    if (o && host && c->timed &&
        (json_object_set_new(o, "host_s", json_real(c->host_s)) != 0 ||
         (kernel && json_object_set_new(o, "start_s", json_real(c->start_s)) != 0) ||
         json_object_set_new(o, "waits_on", json_string(c->waits_on_host ? "host" : "device")) != 0)) {
        json_decref(o);
        return NULL;
    }
    if (o && kernel && c->cast_loop > 0 && json_object_set_new(o, "cast_loop", json_real(c->cast_loop)) != 0) {
        json_decref(o);
        return NULL;
    }
    if (o && kernel && !c->timed && json_object_set_new(o, "timed", json_false()) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* json_object_set_new that remembers a value jansson refused (NULL: a
 * non-finite real or no memory) instead of dropping the key silently. */
static void set_checked(json_t *o, const char *key, json_t *v, int *ok)
{
    if (!v || json_object_set_new(o, key, v) != 0) *ok = 0;
}

json_t *mb_model_row_json(const mb_model_row *r, int with_device)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = 1;
    if (with_device) set_checked(o, "device", json_string(r->dev->name), &ok);
    set_checked(o, "variant", json_string(r->g->name), &ok);
    set_checked(o, "plan", json_string(mb_plan_name(r->plan->kind)), &ok);
    set_checked(o, "dtype", json_string(mb_model_row_dtype(r)), &ok);
    set_checked(o, "n", json_integer((json_int_t)r->n), &ok);
    set_checked(o, "kernels", json_integer(r->plan->n_kernels), &ok);
    if (r->fw != MB_FW_NONE) set_checked(o, "framework", json_string(mb_framework_name(r->fw)), &ok);
    if (r->phase != MB_PHASE_ALL) set_checked(o, "phase", json_string(mb_phase_name(r->phase)), &ok);
    json_t *tot = cost_json(&r->est.total, r->fw, r->host, 0);
    if (!tot || json_object_update(o, tot) != 0) ok = 0;
    json_decref(tot);
    set_checked(o, "saved_bytes", json_integer((json_int_t)r->est.saved_bytes), &ok);
    set_checked(o, "traffic_elements", json_real(mb_model_row_elements(r)), &ok);
    set_checked(o, "bandwidth_gbs", json_real(r->est.bandwidth_gbs), &ok);
    set_checked(o, "bandwidth_source", json_string(r->est.bandwidth_source), &ok);
    if (r->shape.rank == 2) { /* 2-D results only: 1-D objects stay as they were */
        char shape[48];
        mb_shape_format(r->shape, shape, sizeof shape);
        set_checked(o, "shape", json_string(shape), &ok);
        set_checked(o, "rows", json_integer((json_int_t)r->shape.rows), &ok);
        set_checked(o, "cols", json_integer((json_int_t)r->shape.cols), &ok);
    }
    for (int k = 0; r->plan->kind != MB_PLAN_EAGER && k < r->plan->n_kernels; k++)
        if (strstr(r->plan->kernels[k].name, "_colsum")) { /* a fused backward's column kernel: how it sums */
            set_checked(o, "colsum", json_string(mb_colsum_name(r->plan->g->colsum)), &ok);
            break;
        }
    for (int i = 0; i < r->plan->g->n_nodes; i++)
        if (r->plan->g->nodes[i].shape == MB_SHC_PART) { /* --colsum partial: the blocks summed in */
            set_checked(o, "colsum_blocks", json_integer((json_int_t)mb_device_partial_blocks(r->dev, r->shape.rows)), &ok);
            break;
        }
    json_t *pk = json_array();
    for (int k = 0; pk && k < r->plan->n_kernels; k++) {
        const mb_kernel *K = &r->plan->kernels[k];
        json_t *ko = cost_json(&r->est.per_kernel[k], r->fw, r->host, 1);
        if (!ko) { ok = 0; break; }
        set_checked(ko, "name", json_string(K->name), &ok);
        set_checked(ko, "backward", json_boolean(K->is_backward), &ok);
        set_checked(ko, "ops", json_integer(K->n_nodes), &ok);
        if (K->passes > 1) { /* row kernels: the passes made here and the one-pass limit */
            int64_t cols = mb_kernel_onepass_max_cols(K, r->dev);
            set_checked(ko, "passes", json_integer(r->est.per_kernel[k].passes), &ok);
            set_checked(ko, "passes_multi", json_integer(K->passes), &ok);
            set_checked(ko, "onepass_max_cols", json_integer((json_int_t)cols), &ok);
            if (r->est.per_kernel[k].passes > 1) { /* multi-pass here: what the re-reads hit */
                set_checked(ko, "rows_in_flight", json_integer((json_int_t)r->est.per_kernel[k].rows_in_flight), &ok);
                set_checked(ko, "rereads_cached", json_boolean(r->est.per_kernel[k].rereads_cached), &ok);
            }
            if (r->dev->register_kib > 0) { /* a row held in registers alone (a Triton program a row) */
                set_checked(ko, "register_max_cols", json_integer((json_int_t)mb_kernel_register_max_cols(r->plan->g, K, r->dev)),
                            &ok);
                set_checked(ko, "register_spills", json_boolean(register_spills(r, K)), &ok);
            }
        }
        if (json_array_append_new(pk, ko) != 0) ok = 0;
    }
    set_checked(o, "per_kernel", pk, &ok);
    if (!ok) { json_decref(o); return NULL; }
    return o;
}
