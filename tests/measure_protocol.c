/* measure_protocol.c — the protocol (measure/protocol.c) over a fake backend
 * whose ops log every call and return scripted samples and checks: warm-up
 * count and the early check, the stop rule, poison before the last sample
 * and its check, failed checks kept as verified = 0, invalid samples
 * dropped, per-kernel statistics, contention, the stop flag, once mode;
 * the note callback and quiet; settings from a fake environment. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include "mb_test.h"
#include "protocol_int.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define EARLY_REP 8u
#define FINAL_REP 9u

/* What the fake backend does, and what it saw. */
typedef struct fake {
    /* script */
    int once;                /* r->once */
    int invalid_at[4];       /* sample calls (0-based) that come back invalid; -1 ends */
    int noisy;               /* alternate 1 ms and 2 ms instead of a steady 1 ms */
    int contended_every;     /* > 0: every such sample is contended; 0: not watched */
    int early_poisoned;      /* the early check finds elements still poisoned */
    int final_bad;           /* the final check finds elements off */
    int extra_bad;           /* the extra check fails */
    int stop_after;          /* > 0: the stop flag is set after this many sample calls */
    volatile sig_atomic_t *stop;
    mb_kern_tensors host;    /* for backward plans (the gradient check reads it) */
    /* record */
    char log[8192];
    int warms, sample_calls, released, release_rc;
} fake;

static fake F;

static void logf_(const char *tok)
{
    size_t used = strlen(F.log);
    snprintf(F.log + used, sizeof F.log - used, "%s%s", used ? " " : "", tok);
}

static int f_prepare(mb_meas_row_run *r, mb_err *err)
{
    (void)err;
    logf_("prepare");
    snprintf(r->row->device, sizeof r->row->device, "fake device");
    snprintf(r->row->backend, sizeof r->row->backend, "fake");
    snprintf(r->row->counters, sizeof r->row->counters, "none-fake");
    r->once = F.once;
    r->be = &F;
    if (r->p->g->has_backward && mb_kern_tensors_alloc(r->p, r->n, 0, &F.host, err)) return MB_ERUN;
    r->host = &F.host;
    return MB_OK;
}

static int f_poison(mb_meas_row_run *r, unsigned rep, mb_err *err)
{
    (void)r, (void)err;
    char tok[32];
    snprintf(tok, sizeof tok, "poison:%u", rep);
    logf_(tok);
    return MB_OK;
}

static int f_warm(mb_meas_row_run *r, mb_err *err)
{
    (void)r, (void)err;
    F.warms++;
    logf_("warm");
    return MB_OK;
}

static int f_flush(mb_meas_row_run *r, mb_err *err)
{
    (void)r, (void)err;
    logf_("flush");
    return MB_OK;
}

/* Steady 1 ms (or 1 / 2 ms alternating); kernel k takes (k + 1) x 0.1 ms.
 * An invalid sample carries absurd times: they must not reach the row. */
static int f_sample(mb_meas_row_run *r, mb_meas_sample *s, mb_err *err)
{
    (void)err;
    int call = F.sample_calls++;
    logf_("sample");
    int invalid = 0;
    for (int i = 0; i < 4 && F.invalid_at[i] >= 0; i++) invalid |= F.invalid_at[i] == call;
    s->valid = !invalid;
    s->total_s = invalid ? 99.0 : F.noisy && call % 2 ? 2e-3 : 1e-3;
    for (int k = 0; k < r->p->n_kernels; k++) s->kernel_s[k] = invalid ? 99.0 : (k + 1) * 1e-4;
    if (F.contended_every > 0) s->contended = call % F.contended_every == 0;
    if (F.stop_after > 0 && F.sample_calls >= F.stop_after) *F.stop = 1;
    return MB_OK;
}

static int f_check(mb_meas_row_run *r, unsigned rep, mb_kern_check *ck, mb_err *err)
{
    (void)r, (void)err;
    char tok[32];
    snprintf(tok, sizeof tok, "check:%u", rep);
    logf_(tok);
    memset(ck, 0, sizeof *ck);
    ck->first_bad = ck->first_bad_node = -1;
    ck->tol = 1e-4;
    ck->max_rel_err = 1e-6;
    if (rep == EARLY_REP && F.early_poisoned) ck->poisoned = 7;
    if (rep == FINAL_REP && F.final_bad) {
        ck->bad = 3;
        ck->first_bad = 5;
        ck->first_got = 1.5;
        ck->first_want = 1.0;
        ck->max_rel_err = 0.5;
    }
    ck->passed = !ck->poisoned && !ck->bad;
    return MB_OK;
}

static int f_extra(mb_meas_row_run *r, int *ok, char *msg, size_t msgsz, mb_err *err)
{
    (void)r, (void)err;
    logf_("extra");
    *ok = !F.extra_bad;
    if (F.extra_bad) snprintf(msg, msgsz, "fake extra check failed");
    return MB_OK;
}

static int f_after(mb_meas_row_run *r, mb_err *err)
{
    (void)err;
    logf_("after");
    mb_meas_note(r->c, MB_MEAS_NOTE, "fake note %d", 1);
    mb_meas_note(r->c, MB_MEAS_WARNING, "fake warning %d", 2);
    return MB_OK;
}

static void f_release(mb_meas_row_run *r, int rc)
{
    logf_("release");
    F.released++;
    F.release_rc = rc;
    mb_kern_tensors_free(&F.host);
    r->be = NULL;
}

static const mb_meas_ops fake_ops = {
    .name = "fake",
    .early_rep = EARLY_REP,
    .final_rep = FINAL_REP,
    .early_check_max_n = 1 << 16,
    .prepare = f_prepare,
    .poison = f_poison,
    .warm = f_warm,
    .flush = f_flush,
    .sample = f_sample,
    .check = f_check,
    .extra_check = f_extra,
    .after_timing = f_after,
    .release = f_release,
};

/* Notes as the callback got them: "level:msg|..." */
static char notes[1024];

static void collect_note(void *ctx, const char *level, const char *msg)
{
    CHECK(ctx == (void *)notes);
    size_t used = strlen(notes);
    snprintf(notes + used, sizeof notes - used, "%s:%s|", level, msg);
}

static void reset(void)
{
    memset(&F, 0, sizeof F);
    F.invalid_at[0] = -1;
    notes[0] = '\0';
}

static void config(mb_meas_config *c)
{
    mb_meas_config_default(c);
    c->min_time_s = 0; /* steady samples stop at min_reps */
    c->note = collect_note;
    c->note_ctx = notes;
}

/* The expected log of a row: prepare, the warm-up (early check after the
 * first run when early), n_plain flushed samples, the last one on poison. */
static void expected_log(char *buf, size_t sz, int warm, int early, int n_plain, int cold, int check, int extra)
{
    buf[0] = '\0';
    size_t u = (size_t)snprintf(buf, sz, "prepare");
    if (early) u += (size_t)snprintf(buf + u, sz - u, " poison:%u", EARLY_REP);
    for (int w = 0; w < warm; w++) {
        u += (size_t)snprintf(buf + u, sz - u, " warm");
        if (w == 0 && early) u += (size_t)snprintf(buf + u, sz - u, " check:%u", EARLY_REP);
    }
    for (int i = 0; i < n_plain; i++) u += (size_t)snprintf(buf + u, sz - u, "%s sample", cold ? " flush" : "");
    if (check) u += (size_t)snprintf(buf + u, sz - u, " poison:%u", FINAL_REP);
    u += (size_t)snprintf(buf + u, sz - u, "%s sample", cold ? " flush" : "");
    if (check) u += (size_t)snprintf(buf + u, sz - u, " check:%u", FINAL_REP);
    if (check && extra) u += (size_t)snprintf(buf + u, sz - u, " extra");
    snprintf(buf + u, sz - u, " after release");
}

static int run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row, mb_meas_record *pk,
               char *why, size_t whysz, mb_err *err)
{
    const mb_device *dev = mb_device_at(0);
    CHECK_EQ_I64(mb_meas_record_init(row, pk, "expr", p, n, dev, err), MB_OK);
    return mb_meas_protocol_run(&fake_ops, p, n, c, row, pk, why, whysz, err);
}

/* Steady samples: warm-up, early check, min_reps samples then the poisoned
 * last one, checked; per-kernel statistics from the same samples. */
static void steady(const mb_plan *p)
{
    reset();
    mb_meas_config c;
    config(&c);
    c.warmup = 3;
    mb_meas_record row, pk[16];
    char why[256] = "stale", want[4096];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
    expected_log(want, sizeof want, 3, 1, 10, 1, 1, 0);
    CHECK(!strcmp(F.log, want));
    if (strcmp(F.log, want)) fprintf(stderr, "log:  %s\nwant: %s\n", F.log, want);
    CHECK_EQ_I64(F.warms, 3);
    CHECK_EQ_I64(row.reps, 11); /* min_reps, then the last sample on fresh poison */
    CHECK(row.verified);
    CHECK(why[0] == '\0');
    CHECK_NEAR(row.time_s_median, 1e-3, 1e-12);
    CHECK_NEAR(row.max_rel_err, 1e-6, 1e-9);
    CHECK(row.time_cv < 1e-9);
    CHECK_EQ_I64(row.contended, -1); /* not watched */
    CHECK(isnan(row.host_copy_gbs) && isnan(row.host_copy_ratio)); /* no host reference */
    CHECK(!strcmp(row.device, "fake device") && !strcmp(row.counters, "none-fake"));
    for (int k = 0; k < p->n_kernels; k++) {
        CHECK_EQ_I64(pk[k].reps, 11);
        CHECK_NEAR(pk[k].time_s_median, (k + 1) * 1e-4, 1e-9);
        CHECK(pk[k].verified);
        CHECK(!strcmp(pk[k].backend, "fake") && !strcmp(pk[k].counters, "none-fake"));
        CHECK_EQ_I64(pk[k].dram_read_bytes, -1);
    }
    CHECK_EQ_I64(F.released, 1);
    CHECK_EQ_I64(F.release_rc, MB_OK);
    /* the notes went through the callback, warning and note */
    CHECK(!strcmp(notes, "note:fake note 1|warning:fake warning 2|"));

    /* quiet: the note is dropped, the warning kept */
    reset();
    c.quiet = 1;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(!strcmp(notes, "warning:fake warning 2|"));
}

/* The stop rule: noisy samples run to max_reps; a long timeout, then a short one. */
static void stop_rule(const mb_plan *p)
{
    reset();
    F.noisy = 1;
    mb_meas_config c;
    config(&c);
    c.max_reps = 25;
    mb_meas_record row;
    char why[256];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK_EQ_I64(row.reps, 26);
    CHECK(row.time_cv > 0.3);
    /* min_reps above the default, steady: min_reps then the last */
    reset();
    config(&c);
    c.min_reps = 17;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK_EQ_I64(row.reps, 18);
    /* a min_reps below 10 still takes 10 */
    reset();
    config(&c);
    c.min_reps = 3;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK_EQ_I64(row.reps, 11);
}

/* Warm samples (no flush), no check (no poison, no checks), and the early
 * check skipped above the backend's limit. */
static void warm_unchecked_large(const mb_plan *p)
{
    reset();
    mb_meas_config c;
    config(&c);
    c.cold = 0;
    c.check = 0;
    mb_meas_record row;
    char why[256], want[4096];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    expected_log(want, sizeof want, 2, 0, 10, 0, 0, 0);
    CHECK(!strcmp(F.log, want));
    CHECK(!row.verified && isnan(row.max_rel_err));

    reset();
    config(&c);
    c.warmup = 0; /* at least one warm-up run */
    CHECK_EQ_I64(run(p, (1 << 16) + 1, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    expected_log(want, sizeof want, 1, 0, 10, 1, 1, 0);
    CHECK(!strcmp(F.log, want));
    if (strcmp(F.log, want)) fprintf(stderr, "log:  %s\nwant: %s\n", F.log, want);
    CHECK(row.verified);
}

/* Failed checks: the row is kept, verified = 0, why names the first failure. */
static void failed_checks(const mb_plan *p, const mb_plan *bwd)
{
    reset();
    F.early_poisoned = 1;
    F.final_bad = 1;
    mb_meas_config c;
    config(&c);
    mb_meas_record row;
    char why[256];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(!row.verified);
    CHECK(!strncmp(why, "first run: 7 elements never written", 35));
    CHECK_NEAR(row.max_rel_err, 0.5, 1e-12);
    CHECK_EQ_I64(row.reps, 11);

    reset();
    F.final_bad = 1;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(!row.verified);
    CHECK(!strncmp(why, "last sample: 3 elements off, first at [5] of a result: got 1.5, want 1", 70));
    if (strncmp(why, "last sample: 3", 14)) fprintf(stderr, "why: %s\n", why);

    /* backward plan: the gradient check runs on r->host, then the backend's own */
    reset();
    char want[4096];
    CHECK_EQ_I64(run(bwd, 256, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    expected_log(want, sizeof want, 2, 1, 10, 1, 1, 1);
    CHECK(!strcmp(F.log, want));
    CHECK(row.verified);
    reset();
    F.extra_bad = 1;
    CHECK_EQ_I64(run(bwd, 256, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(!row.verified);
    CHECK(!strcmp(why, "fake extra check failed"));
}

/* Invalid samples are dropped and taken again; contention is summed. */
static void invalid_and_contended(const mb_plan *p)
{
    reset();
    F.invalid_at[0] = 2;
    F.invalid_at[1] = 5;
    F.invalid_at[2] = 12; /* the first try of the last sample: taken again */
    F.invalid_at[3] = -1;
    F.contended_every = 3;
    mb_meas_config c;
    config(&c);
    mb_meas_record row, pk[16];
    char why[256];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
    CHECK_EQ_I64(row.reps, 11);
    CHECK_EQ_I64(F.sample_calls, 14);
    CHECK_NEAR(row.time_s_median, 1e-3, 1e-12);
    CHECK(row.time_s_p90 < 1.0 && row.time_cv < 1e-9); /* no 99 s sample got in */
    for (int k = 0; k < p->n_kernels; k++) CHECK_NEAR(pk[k].time_s_p90, (k + 1) * 1e-4, 1e-9);
    /* contended calls 0, 3, 6, 9 (12 was dropped) */
    CHECK_EQ_I64(row.contended, 4);
    CHECK_EQ_I64(pk[0].contended, 4);
    /* the last sample's poison is written before each of its tries */
    CHECK(strstr(F.log, "poison:9 flush sample poison:9 flush sample check:9") != NULL);
}

/* The stop flag: sampling ends, MB_ERUN "interrupted", release sees it. */
static void stop_flag(const mb_plan *p)
{
    reset();
    volatile sig_atomic_t stop = 0;
    F.stop = &stop;
    F.stop_after = 3;
    mb_meas_config c;
    config(&c);
    c.stop = &stop;
    mb_meas_record row;
    char why[256];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_ERUN);
    CHECK(!strcmp(e.msg, "interrupted"));
    CHECK_EQ_I64(F.sample_calls, 3);
    CHECK_EQ_I64(F.released, 1);
    CHECK_EQ_I64(F.release_rc, MB_ERUN);
    CHECK(strstr(F.log, "after") == NULL);
}

/* Once: no warm-up, one sample on poison, checked. */
static void once(const mb_plan *p)
{
    reset();
    F.once = 1;
    mb_meas_config c;
    config(&c);
    mb_meas_record row;
    char why[256];
    mb_err e;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(!strcmp(F.log, "prepare poison:9 flush sample check:9 after release"));
    CHECK_EQ_I64(row.reps, 1);
    CHECK(row.verified);
}

/* Settings from a fake environment; a bad value warns and leaves the default. */
static const char *const env[][2] = {
    {"MB_CUDA_DEVICE", "x1"}, {"MB_CUDA_NO_BLOCK", "1"}, {"MB_CUDA_ONCE", "1"},
    {"MB_CUDA_IMPL", "eval"}, {"MB_CUPTI", "0"}, {"MB_CUPTI_KERNEL_CLEAN", "0"}};
static int env_case;

static char *fake_getenv(const char *name)
{
    if (env_case == 1) return !strcmp(name, "MB_CUDA_DEVICE") ? (char *)"3" : NULL;
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        if (!strcmp(env[i][0], name)) return (char *)env[i][1];
    return NULL;
}

static void environment(void)
{
    reset();
    mb_meas_config c;
    config(&c);
    CHECK_EQ_I64(c.cuda_block, 1);
    env_case = 0;
    mb_meas_config_env(&c, fake_getenv);
    CHECK_EQ_I64(c.cuda_device, 0);
    CHECK_EQ_I64(c.cuda_block, 0);
    CHECK_EQ_I64(c.cuda_once, 1);
    CHECK_EQ_I64(c.cuda_impl, MB_MEAS_CUDA_IMPL_EVAL);
    CHECK_EQ_I64(c.cupti_disabled, 1);
    CHECK_EQ_I64(c.cupti_kernel_clean, 0);
    CHECK(strstr(notes, "warning:ignoring MB_CUDA_DEVICE='x1'") != NULL);
    env_case = 1;
    config(&c);
    mb_meas_config_env(&c, fake_getenv);
    CHECK_EQ_I64(c.cuda_device, 3);
    CHECK_EQ_I64(c.cuda_block, 1);
    /* --help names every variable */
    char buf[4096] = "";
    FILE *fp = fmemopen(buf, sizeof buf - 1, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    mb_meas_env_usage(fp);
    fclose(fp);
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) CHECK(strstr(buf, env[i][0]) != NULL);
}

/* The host reference: copies timed beside a cold row's samples fill its
 * host_copy_gbs and its ratio to the calibrated figure (and each kernel's);
 * a warm row takes none (the copy would evict the cache); the backend's
 * calls are the same with and without it. */
static void host_reference(const mb_plan *p)
{
    mb_meas_hostref h;
    mb_err e;
    CHECK_EQ_I64(mb_meas_hostref_init(&h, 1 << 14, 1e6, &e), MB_OK);
    CHECK_EQ_I64(h.n, 1 << 14);
    CHECK(h.calibrated_op_geps[0] == 0 && h.calibrated_op_geps[1] == 0); /* none unless set */
    CHECK(mb_meas_hostref_copy_gbs(&h) > 0);
    for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) CHECK(mb_meas_hostref_op_geps(o) > 0);
    /* medians of rates: the rate of the median time; non-positive skipped */
    CHECK_NEAR(mb_meas_median_rate((const double[]){1, 4, 2}, 3), 2, 1e-12);
    CHECK_NEAR(mb_meas_median_rate((const double[]){0, 5, -1}, 3), 5, 1e-12);
    CHECK(mb_meas_median_rate((const double[]){0}, 1) == 0);
    CHECK(mb_meas_hostref_median_gbs(&h, 3) > 0);
    /* when references are due: first, fifth, every 50th, last, and after
     * the interval; three at least in a row of the minimum 10 samples */
    CHECK(mb_meas_hostref_due(0, 0, 0, 1e9) && mb_meas_hostref_due(9, 1, 0, 1e9));
    CHECK(!mb_meas_hostref_due(1, 0, 0, 1e9) && mb_meas_hostref_due(1, 0, 0.6, 0.5));
    int due10 = 0, due201 = 0;
    for (int i = 0; i < 10; i++) due10 += mb_meas_hostref_due(i, i == 9, 0, 1e9);
    for (int i = 0; i < 201; i++) due201 += mb_meas_hostref_due(i, i == 200, 0, 1e9);
    CHECK_EQ_I64(due10, 3);  /* 0, 5, 9 */
    CHECK_EQ_I64(due201, 6); /* 0, 5, 50, 100, 150, 200 */
    mb_meas_config c;
    mb_meas_record row, pk[16];
    char why[256], want[4096];
    for (int interval = 0; interval < 2; interval++) {
        reset();
        config(&c);
        c.hostref = &h;
        h.interval_s = interval ? 1e9 : 0; /* before every sample; by the sample count */
        CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
        expected_log(want, sizeof want, 2, 1, 10, 1, 1, 0);
        CHECK(!strcmp(F.log, want));
        CHECK(row.host_copy_gbs > 0 && row.host_copy_gbs < 1e6);
        CHECK_NEAR(row.host_copy_ratio, row.host_copy_gbs / 1e6, 1e-12);
        for (int k = 0; k < p->n_kernels; k++)
            CHECK(pk[k].host_copy_gbs == row.host_copy_gbs && pk[k].host_copy_ratio == row.host_copy_ratio);
        CHECK(MB_MEAS_DRIFTED(row.host_copy_ratio));
        CHECK(isnan(row.host_op_ratio) && isnan(pk[0].host_op_ratio)); /* none calibrated */
    }
    /* with a calibrated op rate: its ratio too (1e-6 Gelem/s: far off) */
    reset();
    config(&c);
    c.hostref = &h;
    h.calibrated_op_geps[0] = 1e-6;
    CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
    CHECK(row.host_op_ratio > 1e3 && pk[0].host_op_ratio == row.host_op_ratio);
    CHECK(MB_MEAS_HOST_DRIFTED(1.0, row.host_op_ratio) && !MB_MEAS_HOST_DRIFTED(1.0, 1.1));
    /* two ops: the ratio farther from 1 on a log scale. sin at ~5 Gelem/s
     * against 1e-6 is ~5e6 above; sigmoid against 1e9 is ~1e-8 below: farther */
    h.calibrated_op_geps[1] = 1e9;
    CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
    CHECK(row.host_op_ratio < 1e-3);
    h.calibrated_op_geps[0] = 1e-12; /* now sin's ratio, ~1e12 above, is the farther */
    CHECK_EQ_I64(run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_OK);
    CHECK(row.host_op_ratio > 1e7);
    h.calibrated_op_geps[0] = h.calibrated_op_geps[1] = 0;
    /* warm: no reference */
    reset();
    config(&c);
    c.hostref = &h;
    c.cold = 0;
    CHECK_EQ_I64(run(p, 4096, &c, &row, NULL, why, sizeof why, &e), MB_OK);
    CHECK(isnan(row.host_copy_gbs) && isnan(row.host_copy_ratio));
    mb_meas_hostref_free(&h);
    CHECK(h.src == NULL && h.dst == NULL);
    /* the drift rule: more than 20% off either way */
    CHECK(!MB_MEAS_DRIFTED(1.0) && !MB_MEAS_DRIFTED(0.81) && !MB_MEAS_DRIFTED(1.19));
    CHECK(MB_MEAS_DRIFTED(0.79) && MB_MEAS_DRIFTED(1.21) && !MB_MEAS_DRIFTED(NAN));
}

int main(void)
{
    mb_err e;
    mb_graph *g = NULL, *gb = NULL;
    mb_plan *p = NULL, *pb = NULL;
    CHECK_EQ_I64(mb_parse_expr("y = sin(x)**2 + cos(x)**2", MB_F32, &g, &e), MB_OK);
    CHECK_EQ_I64(mb_parse_variant("name b\ninput x\ny = sigmoid(x) * x\noutput y\nbackward\n", "<test>", MB_F32,
                                  &gb, &e),
                 MB_OK);
    if (!g || !gb || mb_plan_build(g, MB_PLAN_EAGER, &p, &e) || mb_plan_build(gb, MB_PLAN_STORE, &pb, &e)) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return 1;
    }
    CHECK(p->n_kernels > 1 && p->n_kernels <= 16);
    steady(p);
    stop_rule(p);
    warm_unchecked_large(p);
    failed_checks(p, pb);
    invalid_and_contended(p);
    stop_flag(p);
    once(p);
    host_reference(p);
    environment();
    mb_plan_free(p);
    mb_plan_free(pb);
    mb_graph_free(g);
    mb_graph_free(gb);
    return mb_test_done();
}
