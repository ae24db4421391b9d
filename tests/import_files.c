/* import_files.c — membound import on the fixtures of tests/data/import/
 * (written by hand after ncu's and Kineto's documented formats): the plan
 * each file's launches match, the bytes and times of the rows (figures worked
 * out by hand from the fixtures' numbers), what is left out, and the errors.
 * One row per case. */
#include "mb_test.h"
#include "import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char notes[16384];

static void on_note(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "%s: %s\n", level, msg);
}

/* One expected row: variant, plan, n, kernels, timed repetitions, median
 * time, counted bytes (-1: none), count_check. */
typedef struct want_row {
    const char *variant, *plan;
    long long n;
    int kernels, reps;
    double time_s;
    long long dram_r, dram_w;
    const char *count_check;
} want_row;

typedef struct tcase {
    const char *file;
    mb_imp_format fmt;
    const char *variant, *plan;  /* NULL: from the marks */
    long long n;                 /* 0: from the marks */
    int rc;
    const char *msg;             /* the error's text, or a note that must be there */
    int n_rows, left_out;
    want_row rows[4];
} tcase;

#define MB 1048576LL
static const tcase cases[] = {
    /* details page, auto-scaled Mbyte/usecond, ==PROF== and program lines, rule
       columns; a fill kernel and a sin of another size are left out */
    {"ncu_details_sin2_eager.csv", MB_IMP_NCU, "sin2_plus_cos2", "eager", MB, MB_OK,
     "grid that cannot cover n", 1, 2,
     {{"sin2_plus_cos2", "eager", MB, 5, 2, 18.45e-6, 25200000, 20950000, "ok"}}},
    /* details, --print-units base (byte, ns), thousands separators: the compiled kernel */
    {"ncu_details_sin2_fused.csv", MB_IMP_NCU, "sin2_plus_cos2", "fused", MB, MB_OK, "3 repetitions", 1, 0,
     {{"sin2_plus_cos2", "fused", MB, 1, 3, 2.51e-6, 4198400, 4194304, "ok"}}},
    /* raw page with a units row (Kbyte, us), trailing commas: 8 kernels twice */
    {"ncu_raw_gelu_eager.csv", MB_IMP_NCU, "gelu_tanh", "eager", MB, MB_OK, "auto-scaled units (Kbyte, us)", 1, 0,
     {{"gelu_tanh", "eager", MB, 8, 2, 27.80e-6, 41959420, 33554400, "ok"}}},
    /* raw, kernels renamed by their NVTX range: sigmoid3 forward + backward, one unmarked launch */
    {"ncu_raw_sigmoid3_nvtx.csv", MB_IMP_NCU, NULL, NULL, 0, MB_OK, "outside any membound: mark", 1, 1,
     {{"sigmoid3", "eager", MB, 6, 2, 21.003e-6, 37754880, 25165824, "ok"}}},
    /* the torch trace: record_function marks, times only, the GPU's name mapped */
    {"torch_trace_lecture.json", MB_IMP_TORCH_TRACE, NULL, NULL, 0, MB_OK, "the device table's h200", 4, 1,
     {{"sin2_plus_cos2", "eager", MB, 5, 2, 18.4e-6, -1, -1, ""},
      {"sin2_plus_cos2", "fused", MB, 1, 2, 2.5e-6, -1, -1, ""},
      {"sigmoid3", "eager", MB, 6, 2, 22.2e-6, -1, -1, ""},
      {"copy", "eager", 2 * MB, 1, 2, 5.2e-6, -1, -1, ""}}},
    /* the user's plan filters the marks */
    {"torch_trace_lecture.json", MB_IMP_TORCH_TRACE, NULL, "fused", 0, MB_OK, "not the variant, plan", 1, 25,
     {{"sin2_plus_cos2", "fused", MB, 1, 2, 2.5e-6, -1, -1, ""}}},
    /* bad: a pow missing */
    {"ncu_too_few.csv", MB_IMP_NCU, "sin2_plus_cos2", "eager", MB, MB_EINPUT,
     "4 launches match the plan, which has 5 kernels (sin, pow, cos, pow, add): too few kernels for the plan", 0, 0, {{0}}},
    /* bad: three compiled kernels for a plan of two */
    {"ncu_details_sin2_fused.csv", MB_IMP_NCU, "sigmoid3", "store", MB, MB_EINPUT,
     "3 launches are not whole repetitions of the plan's 2 kernels (fused_fwd, fused_bwd): 1 repetition and 1 "
     "kernel more: too many kernels", 0, 0, {{0}}},
    /* bad: cut inside a quoted field */
    {"ncu_truncated.csv", MB_IMP_NCU, "sin2_plus_cos2", "eager", MB, MB_EINPUT,
     "ncu_truncated.csv:14:38: unterminated quoted field at the end of the file", 0, 0, {{0}}},
    /* bad: no marks and nothing said */
    {"ncu_details_sin2_eager.csv", MB_IMP_NCU, NULL, NULL, 0, MB_EINPUT, "no membound: marks", 0, 0, {{0}}},
    /* bad: a CSV is no trace */
    {"ncu_too_few.csv", MB_IMP_TORCH_TRACE, NULL, NULL, 0, MB_EINPUT, "ncu_too_few.csv:1:1: not JSON", 0, 0, {{0}}},
    /* bad: a trace is no ncu CSV */
    {"torch_trace_lecture.json", MB_IMP_NCU, NULL, NULL, 0, MB_EINPUT, "no ncu CSV header", 0, 0, {{0}}},
};

static void check_row(const mb_meas_record *r, const want_row *w, const char *file)
{
    int ok = !strcmp(r->variant, w->variant) && !strcmp(r->plan, w->plan) && r->n == w->n &&
             r->kernels == w->kernels && r->reps == w->reps && r->dram_read_bytes == w->dram_r &&
             r->dram_write_bytes == w->dram_w && !strcmp(r->count_check, w->count_check) && r->verified == 1 &&
             fabs(r->time_s_median - w->time_s) <= 1e-9 * w->time_s + 1e-15;
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  %s: got %s/%s n=%lld kernels=%d reps=%d t=%.9g dram=%lld/%lld check='%s'\n", file,
                r->variant, r->plan, (long long)r->n, r->kernels, r->reps, r->time_s_median,
                (long long)r->dram_read_bytes, (long long)r->dram_write_bytes, r->count_check);
}

static void run_case(const tcase *c, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, c->file);
    mb_imp_options o;
    mb_imp_options_init(&o);
    o.format = c->fmt;
    o.variant = c->variant;
    o.note = on_note;
    if (c->plan) { o.n_plans = 1; mb_plan_parse(c->plan, &o.plans[0]); }
    int64_t n = c->n;
    if (n) { o.sizes = &n; o.n_sizes = 1; }
    if (c->fmt == MB_IMP_NCU) o.device = "h200";
    notes[0] = '\0';
    mb_imp_result res;
    mb_err e = {{0}};
    int rc = mb_imp_run(path, &o, &res, &e);
    CHECK_EQ_I64(rc, c->rc);
    const char *text = rc ? e.msg : notes;
    if (!strstr(text, c->msg)) {
        CHECK(!"message");
        fprintf(stderr, "  %s: '%s' not in:\n%s\n", c->file, c->msg, text);
    }
    if (rc) return;
    CHECK_EQ_I64(res.rows.n, c->n_rows);
    CHECK_EQ_I64(res.n_left_out, c->left_out);
    for (int i = 0; i < res.rows.n && i < c->n_rows; i++) {
        check_row(&res.rows.rows[i], &c->rows[i], c->file);
        const mb_meas_record *r = &res.rows.rows[i];
        CHECK(!strcmp(r->counters, c->fmt == MB_IMP_NCU ? MB_MEAS_COUNTERS_NCU : MB_MEAS_COUNTERS_TORCH));
        CHECK(!strcmp(r->backend, c->fmt == MB_IMP_NCU ? "cuda-ncu" : "cuda-torch"));
        CHECK(!strcmp(r->device, "h200"));
    }
    /* per-kernel rows: one per plan kernel of each row, the kernels' times summing to the row's */
    int kernels = 0;
    for (int i = 0; i < res.rows.n; i++) kernels += res.rows.rows[i].kernels;
    CHECK_EQ_I64(res.kernel_rows.n, kernels);
    CHECK(res.texts.prov && strstr(res.texts.prov, "outputs were not checked by membound"));
    mb_imp_result_free(&res);
}

/* The first case's kernels one by one: names, bytes, times. */
static void per_kernel(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ncu_details_sin2_eager.csv", dir);
    mb_imp_options o;
    mb_imp_options_init(&o);
    o.variant = "sin2_plus_cos2";
    o.n_plans = 1;
    o.plans[0] = MB_PLAN_EAGER;
    int64_t n = MB;
    o.sizes = &n;
    o.n_sizes = 1;
    o.device = "h200";
    mb_imp_result res;
    mb_err e;
    if (mb_imp_run(path, &o, &res, &e) != MB_OK) { CHECK(!"per-kernel import"); return; }
    static const char *names[] = {"sin", "pow", "cos", "pow", "add"};
    static const double t_us[] = {3.41, 3.31, 3.46, 3.36, 4.91}; /* medians of the two repetitions */
    CHECK_EQ_I64(res.kernel_rows.n, 5);
    for (int k = 0; k < res.kernel_rows.n && k < 5; k++) {
        const mb_meas_record *r = &res.kernel_rows.rows[k];
        CHECK(!strcmp(r->kernel, names[k]));
        CHECK_NEAR(r->time_s_median, t_us[k] * 1e-6, 1e-9);
        CHECK_EQ_I64(r->dram_read_bytes, k == 4 ? 8400000 : 4200000);
        CHECK_EQ_I64(r->dram_write_bytes, 4190000);
        CHECK_EQ_I64(r->read_bytes, (k == 4 ? 2 : 1) * 4 * MB); /* the model's, the lecture's count */
    }
    mb_imp_result_free(&res);
}

/* Small files written here, one row per case: what an import of imported
 * data must refuse (a mark naming a file, duplicate keys, a number with a
 * unit, hex or a decimal comma, a count past 2^53, a negative grid, an ID
 * twice) and what it must read (a byte order mark, a 2-D mark), and names
 * printed with their control characters escaped. */
#define TRACE_HEAD "{\"deviceProperties\": [{\"name\": \"NVIDIA H200\"}], \"traceEvents\": ["
#define TRACE_MARK(m) "{\"cat\": \"gpu_user_annotation\", \"name\": \"" m "\", \"ts\": 0, \"dur\": 100},"
#define TRACE_COPY(ts, dur) "{\"cat\": \"kernel\", \"name\": \"void at::native::direct_copy_kernel_cuda(x)\", " \
    "\"ts\": " ts ", \"dur\": " dur ", \"args\": {\"grid\": [2048, 1, 1], \"block\": [128, 1, 1]}}"
#define TRACE(m, dur) TRACE_HEAD TRACE_MARK(m) TRACE_COPY("10", dur) "," TRACE_COPY("20", "5.2") "]}"
#define COPY_MARK "membound:copy:eager:n=2097152:f32"
#define NCU_HEAD "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"dram__bytes_read.sum\"," \
    "\"dram__bytes_write.sum\",\"gpu__time_duration.sum\"\n\"\",\"\",\"\",\"\",\"byte\",\"byte\",\"nsecond\"\n"
#define NCU_ROW(id, grid, rd, ns) "\"" id "\",\"void at::native::direct_copy_kernel_cuda(x)\",\"(128, 1, 1)\",\"" \
    grid "\",\"" rd "\",\"8388608\",\"" ns "\"\n"
#define NCU(id2, grid, rd, ns) NCU_HEAD NCU_ROW("0", "(2048, 1, 1)", "8388608", "5200") NCU_ROW(id2, grid, rd, ns)

typedef struct text_case {
    mb_imp_format fmt;
    const char *text;
    int rc;
    const char *msg;      /* in the error, or in the notes */
    const char *not_msg;  /* never in either (NULL: no such) */
    long long rows, cols; /* the row's shape when rank 2 (0: 1-D) */
} text_case;

static const text_case text_cases[] = {
    {MB_IMP_TORCH_TRACE, TRACE("membound:/etc/passwd:eager:n=2097152:f32", "5.2"), MB_EINPUT,
     "'/etc/passwd' is no variant name", "root", 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE("membound:copy.mb:eager:n=2097152:f32", "5.2"), MB_EINPUT,
     "'copy.mb' is no variant name: a mark selects a built-in variant or the one --variant or --expr gives", NULL,
     0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK "\\u001b[2J", "5.2"), MB_EINPUT, "f32\\x1b[2J': expected", "\x1b", 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "5.2, \"dur\": 999"), MB_EINPUT, "duplicate object key", NULL, 0, 0},
    /* a key twice in an event's args, and at the top level: each refused with its key (and event) */
    {MB_IMP_TORCH_TRACE,
     TRACE_HEAD TRACE_MARK(COPY_MARK) "{\"cat\": \"kernel\", \"name\": \"direct_copy_kernel_cuda\", \"ts\": 10, "
     "\"dur\": 5.2, \"args\": {\"correlation\": 1, \"grid\": [2048, 1, 1], \"correlation\": 2}}]}",
     MB_EINPUT, "traceEvents[1]: not JSON: duplicate object key \"correlation\"", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, "{\"deviceProperties\": [], \"deviceProperties\": [], \"traceEvents\": []}", MB_EINPUT,
     ":1:43: not JSON: duplicate object key \"deviceProperties\"", NULL, 0, 0},
    /* the GPU's name after the events: read wherever it stands */
    {MB_IMP_TORCH_TRACE,
     "{\"traceEvents\": [" TRACE_MARK(COPY_MARK) TRACE_COPY("10", "5.2") "," TRACE_COPY("20", "5.2")
     "], \"deviceProperties\": [{\"name\": \"NVIDIA H200\"}]}", MB_OK, "the device table's h200", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "\"3.4ms\""), MB_EINPUT, "\"dur\": \"3.4ms\": expected a decimal number",
     NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "\"0x10\""), MB_EINPUT, "\"dur\": \"0x10\": expected", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "\"1e400\""), MB_EINPUT, "\"dur\": \"1e400\": expected", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "1e308"), MB_EINPUT, "\"dur\": 1e+308: expected", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, TRACE(COPY_MARK, "\"5.2\""), MB_OK, "2 timed", NULL, 0, 0},
    {MB_IMP_TORCH_TRACE, "\xEF\xBB\xBF" TRACE(COPY_MARK, "5.2"), MB_OK, "2 timed", NULL, 0, 0},
    /* an empty key first, then again (the duplicate-key set had no storage yet:
     * an offset on NULL, which fuzz_import found under UBSan) */
    {MB_IMP_TORCH_TRACE, "{\"\": 1, \"\": 2, \"traceEvents\": []}", MB_EINPUT, "duplicate object key \"\"", NULL, 0,
     0},
    {MB_IMP_TORCH_TRACE, TRACE("membound:copy:eager:n=2048x1024:f32", "5.2"), MB_OK, "2 timed", NULL, 2048, 1024},
    /* nested marks: each launch under the innermost, an outer one's wider span around it */
    {MB_IMP_TORCH_TRACE,
     TRACE_HEAD "{\"cat\": \"gpu_user_annotation\", \"name\": \"membound:sigmoid3:eager:n=2097152:f32\", "
     "\"ts\": 0, \"dur\": 1000}," "{\"cat\": \"gpu_user_annotation\", \"name\": \"" COPY_MARK "\", \"ts\": 5, "
     "\"dur\": 50}," TRACE_COPY("10", "5.2") "," TRACE_COPY("20", "5.2") "]}",
     MB_OK, "2 timed", "sigmoid3", 0, 0},
    {MB_IMP_TORCH_TRACE,
     "{\"deviceProperties\": [{\"name\": \"NVIDIA H200\\u001b]0;title\\u0007\"}], \"traceEvents\": ["
     TRACE_MARK(COPY_MARK) TRACE_COPY("10", "5.2") "," TRACE_COPY("20", "5.2") "]}",
     MB_OK, "GPU 'NVIDIA H200\\x1b]0;title\\x07'", "\x1b", 0, 0},
    {MB_IMP_NCU, NCU("1", "(2048, 1, 1)", "8388608", "5200"), MB_OK, "2 timed", NULL, 0, 0},
    {MB_IMP_NCU, NCU("1", "(2048, 1, 1)", "8388608", "2,5"), MB_EINPUT, "value '2,5': expected a decimal number",
     NULL, 0, 0},
    {MB_IMP_NCU, NCU("1", "(2048, 1, 1)", "0x800000", "5200"), MB_EINPUT, "value '0x800000': expected", NULL, 0, 0},
    {MB_IMP_NCU, NCU("1", "(2048, 1, 1)", "10000000000000000000", "5200"), MB_EINPUT, "more than 2^53 bytes", NULL,
     0, 0},
    {MB_IMP_NCU, NCU("1", "(2048, 1, 1)", "8388608", "4000000000000"), MB_EINPUT, "more than an hour", NULL, 0, 0},
    {MB_IMP_NCU, NCU("1", "(-2048, 1, 1)", "8388608", "5200"), MB_EINPUT,
     "grid size '(-2048, 1, 1)': expected (X, Y, Z)", NULL, 0, 0},
    {MB_IMP_NCU, NCU("0", "(2048, 1, 1)", "8388608", "5200"), MB_EINPUT, "launch ID '0' after ID 0", NULL, 0, 0},
};

static void run_text_case(const text_case *c, int i)
{
    char path[] = "/tmp/mb_import_case_XXXXXX";
    int fd = mkstemp(path);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp) { CHECK(!"temporary file"); return; }
    fputs(c->text, fp);
    fclose(fp);
    mb_imp_options o;
    mb_imp_options_init(&o);
    o.format = c->fmt;
    o.note = on_note;
    int64_t n = 2 * MB;
    if (c->fmt == MB_IMP_NCU) { /* no marks: what it ran is said; a trace's GPU is its own */
        o.device = "h200";
        o.variant = "copy";
        o.n_plans = 1;
        o.plans[0] = MB_PLAN_EAGER;
        o.sizes = &n;
        o.n_sizes = 1;
    }
    notes[0] = '\0';
    mb_imp_result res;
    mb_err e = {{0}};
    int rc = mb_imp_run(path, &o, &res, &e);
    unlink(path);
    CHECK_EQ_I64(rc, c->rc);
    const char *text = rc ? e.msg : notes;
    int has = strstr(text, c->msg) != NULL, hasnt = !c->not_msg || !strstr(text, c->not_msg);
    CHECK(has && hasnt);
    if (!has || !hasnt) fprintf(stderr, "  text case %d: '%s'%s in:\n%s\n", i, has ? c->not_msg : c->msg,
                                has ? "" : " not", text);
    if (rc) return;
    CHECK_EQ_I64(res.rows.n, 1);
    if (res.rows.n == 1) {
        CHECK_NEAR(res.rows.rows[0].time_s_median, 5.2e-6, 1e-9);
        CHECK_EQ_I64(res.rows.rows[0].rows, c->rows);
        CHECK_EQ_I64(res.rows.rows[0].cols, c->cols);
        CHECK_EQ_I64(res.rows.rows[0].n, 2 * MB);
    }
    mb_imp_result_free(&res);
}

int main(void)
{
    for (size_t i = 0; i < sizeof text_cases / sizeof text_cases[0]; i++) run_text_case(&text_cases[i], (int)i);
    const char *src = getenv("MB_SRC");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/import", src ? src : ".");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], dir);
    per_kernel(dir);
    /* every op a variant can call, and every fused backward kernel, has PyTorch's kernel name */
    for (int op = 0; op < MB_OP_COUNT; op++) {
        const mb_op_info *info = mb_op_info_of((mb_op)op);
        if (info->spell == MB_SPELL_NONE || info->kind == MB_OPK_INPUT) continue;
        CHECK(mb_imp_kernel_pattern(info->name) != NULL);
        if (!mb_imp_kernel_pattern(info->name)) fprintf(stderr, "  op '%s': no PyTorch kernel name\n", info->name);
        if (info->bwd_kernel && !mb_imp_kernel_pattern(info->bwd_kernel))
            fprintf(stderr, "  backward kernel '%s': no PyTorch kernel name\n", info->bwd_kernel);
        CHECK(!info->bwd_kernel || mb_imp_kernel_pattern(info->bwd_kernel) != NULL);
    }
    CHECK(mb_imp_kernel_pattern("add_grad") != NULL);
    CHECK(mb_imp_kernel_pattern("colsum") != NULL && mb_imp_kernel_pattern(MB_KERNEL_GAMMA_BETA) != NULL);
    /* GPU names as tools print them, to the table's ids */
    CHECK(mb_imp_device_id("NVIDIA H200") && !strcmp(mb_imp_device_id("NVIDIA H200"), "h200"));
    CHECK(mb_imp_device_id("NVIDIA H100 80GB HBM3") && !strcmp(mb_imp_device_id("NVIDIA H100 80GB HBM3"), "h100-sxm"));
    CHECK(mb_imp_device_id("NVIDIA A100-SXM4-80GB") && !strcmp(mb_imp_device_id("NVIDIA A100-SXM4-80GB"), "a100-80gb"));
    CHECK(mb_imp_device_id("Tesla T4") && !strcmp(mb_imp_device_id("Tesla T4"), "t4"));
    CHECK(mb_imp_device_id("NVIDIA Quadro Z9000") == NULL);
    return mb_test_done();
}
