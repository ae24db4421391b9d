/* summary.c — what a calibration measured, for the user: one line per device
 * key the backend measures, walked from model/device_keys.def (a new key's
 * line comes with its row), then the probes' own figures (the knee, the
 * rounds' spread, first touch per size, op rates, compiled chains). Does not
 * measure (the probes do) or decide what is refused (spec.c). */
#include "cal_int.h"

#include <stdio.h>
#include <string.h>

void mb_cal_print_keys(FILE *fp, const mb_device *d, unsigned backend, const char (*detail)[160])
{
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (!(k->cal & backend) || (k->type != MB_DKT_NUM && k->type != MB_DKT_COUNT && k->type != MB_DKT_FLAG)) continue;
        const char *how = detail && detail[i][0] ? detail[i] : k->doc;
        if (k->write == MB_DKW_GIVEN && !mb_device_given(d, (mb_dk_id)i)) {
            fprintf(fp, "  %-24s %-14s not measured%s%s%s; absent: %s\n", k->key, "-",
                    detail && detail[i][0] ? " (" : "", detail && detail[i][0] ? detail[i] : "",
                    detail && detail[i][0] ? ")" : "", k->def);
            continue;
        }
        char value[48];
        snprintf(value, sizeof value, "%.4g%s%s", mb_device_num(d, k, 0), k->unit[0] ? " " : "", k->unit);
        fprintf(fp, "  %-24s %-14s %s\n", k->key, value, how);
    }
}

/* The op rates of family k (op_geps) in d, four a line, 1e9 elements/s. */
static void print_ops(FILE *fp, const mb_device *d, const char *where, int skip_rows)
{
    fprintf(fp, "  op rates (1e9 elements/s, %s):\n", where);
    int shown = 0;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) {
        /* no tile form: the model costs their parts */
        if (skip_rows && (MB_OP_IS_ROW((mb_op)op) || MB_OP_IS_COLUMN((mb_op)op))) continue;
        fprintf(fp, "    %-10s %9.3f%s", mb_op_name((mb_op)op), d->op_geps[op], ++shown % 4 == 0 ? "\n" : "");
    }
    if (shown % 4) fprintf(fp, "\n");
}

void mb_cal_print_touch(FILE *fp, const mb_cal_result *cal)
{
    fprintf(fp, "  first touch of a fresh allocation over a preallocated write (ms per GB, minima of "
                "rounds):");
    for (int i = 0; i < MB_CAL_TOUCH_SIZES; i++)
        fprintf(fp, " %.0f MiB %.1f%s", cal->touch_mib[i], cal->touch_s_per_gb[i] * 1e3,
                i + 1 < MB_CAL_TOUCH_SIZES ? "," : "\n");
    fprintf(fp, "    -> first_touch_gbs %.2f above the mmap threshold, %.3g MiB (--framework pytorch); "
                "%.2f us per %d KiB page (transparent huge pages: %s); %d of %d samples contended\n",
            cal->first_touch_gbs, cal->alloc_mmap_threshold_mb, cal->touch_us_per_page, cal->touch_page_kib,
            cal->touch_thp[0] ? cal->touch_thp : "unknown", cal->touch_contended, cal->touch_samples);
}

void mb_cal_print_cpu(FILE *fp, const mb_device *d, const mb_cal_result *cal, const char *jit_why_not)
{
    fprintf(fp, "%s: %d threads, LLC %.1f MiB, vector math %s\n", d->label, cal->threads, d->cache_mb,
            mb_kern_vector_isa());
    fprintf(fp, "  last-level cache: %s\n", cal->llc_desc);
    fprintf(fp, "  medians over interleaved rounds: CV <= %.1f%% (bandwidths), <= %.1f%% (rates); "
                "%d of %d samples taken again for contention\n",
            100 * cal->bw_spread, 100 * cal->op_spread, cal->retaken, cal->samples);
    fprintf(fp, "  the spec's figures (device keys):\n");
    mb_cal_print_keys(fp, d, MB_DK_CAL_CPU, cal->detail);
    mb_cal_print_touch(fp, cal);
    print_ops(fp, d, "L1-resident, all threads", 1);
    fprintf(fp, "  row ops (sum ... rms_norm) and colsum: costed by the rates of their parts\n");
    if (cal->compiled_chains)
        fprintf(fp, "  compiled probe chains: %d built, %d op rates from them%s%s\n", cal->compiled_chains,
                cal->compiled_ops, cal->sincos_compiled_geps > 0 ? " and the sincos pair's" : "",
                cal->op_compiled_geps[MB_OP_NEG] > 0 ? "; neg at the add's (its chain folds to a copy)" : "");
    else
        fprintf(fp, "  compiled probe chains: none built (%s); compiled kernels take the op rates above\n",
                jit_why_not);
}

void mb_cal_print_gpu(FILE *fp, const mb_device *d, const char (*detail)[160])
{
    fprintf(fp, "%s\n", d->label);
    mb_cal_print_keys(fp, d, MB_DK_CAL_CUDA, detail);
    print_ops(fp, d, "register-resident", 0);
}
