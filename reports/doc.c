/* doc.c — one document written as Markdown (GitHub tables) and rendered
 * to self-contained HTML by cmark (CommonMark; tables as HTML blocks whose
 * cells cmark renders, images embedded as base64 PNG), plus small number
 * formatting helpers. Does not decide what a report says. */
#include "report_int.h"

#include <cmark.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rpt_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

const char *rpt_num(char *buf, size_t size, double v, int digits)
{
    if (!isfinite(v)) return isinf(v) ? (v > 0 ? "inf" : "-inf") : "—";
    snprintf(buf, size, "%.*g", digits, v);
    return buf;
}

const char *rpt_time(char *buf, size_t size, double s)
{
    if (!isfinite(s)) return "—";
    double a = fabs(s);
    if (a >= 1) snprintf(buf, size, "%.3g s", s);
    else if (a >= 1e-3) snprintf(buf, size, "%.3g ms", s * 1e3);
    else if (a >= 1e-6) snprintf(buf, size, "%.3g us", s * 1e6);
    else snprintf(buf, size, "%.3g ns", s * 1e9);
    return buf;
}

const char *rpt_path(char *buf, size_t size, const char *dir, const char *name)
{
    if (!dir || !dir[0]) snprintf(buf, size, "%s", name);
    else snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

/* Writes s with each power ("sin^2", "2^24", "R^{2}") as superscript
 * digits, as the figures draw them; a '^' not after a letter, a digit or
 * ')' or not before a digit stays. */
static void sup_text(FILE *fp, const char *s, int escape)
{
    static const char *const sup[10] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
    for (const char *p = s; *p; p++) {
        int brace = p[0] == '^' && p[1] == '{';
        const char *q = p + 1 + brace;
        int after = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == ')');
        if (p[0] == '^' && after && isdigit((unsigned char)*q)) {
            for (; isdigit((unsigned char)*q); q++) fputs(sup[*q - '0'], fp);
            if (brace && *q == '}') q++;
            p = q - 1;
            continue;
        }
        if (escape && *p == '\n') { fputc(' ', fp); continue; }
        if (escape && strchr("\\`*_[]<>#|!", *p)) fputc('\\', fp);
        fputc(*p, fp);
    }
}

/* Backslash-escapes the characters CommonMark would read as markup, so
 * data (names, notes, numbers) shows as written (powers as superscripts). */
static void md_text(FILE *fp, const char *s)
{
    sup_text(fp, s, 1);
}

const char *rpt_md(char *buf, size_t size, const char *s)
{
    size_t j = 0;
    for (; *s && j + 3 < size; s++) {
        if (strchr("\\`*_[]<>#|!", *s)) buf[j++] = '\\';
        buf[j++] = *s == '\n' ? ' ' : *s;
    }
    buf[j] = '\0';
    return buf;
}

void rpt_doc_begin(rpt_doc *d, const char *title)
{
    memset(d, 0, sizeof *d);
    d->md = open_memstream(&d->md_buf, &d->md_len);
    d->hmd = open_memstream(&d->hmd_buf, &d->hmd_len);
    snprintf(d->title, sizeof d->title, "%s", title);
    rpt_doc_h(d, 1, title);
}

/* Writes the same text to both streams. */
static void both(rpt_doc *d, const char *text)
{
    if (d->md) fputs(text, d->md);
    if (d->hmd) fputs(text, d->hmd);
}

void rpt_doc_h(rpt_doc *d, int level, const char *text)
{
    if (d->in_table) rpt_doc_table_end(d);
    char hashes[8];
    snprintf(hashes, sizeof hashes, "%.*s ", level, "######");
    both(d, hashes);
    md_text(d->md, text);
    md_text(d->hmd, text);
    both(d, "\n\n");
}

void rpt_doc_p(rpt_doc *d, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (d->in_table) rpt_doc_table_end(d);
    if (d->md) sup_text(d->md, buf, 0);
    if (d->hmd) sup_text(d->hmd, buf, 0);
    both(d, "\n\n");
}

/* One cell's text as HTML: the escaped text rendered inline by cmark. */
static void html_cell(FILE *fp, const char *tag, const char *cls, const char *text)
{
    char *md = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&md, &len);
    if (m) {
        md_text(m, text);
        fclose(m);
    }
    char *html = md ? cmark_markdown_to_html(md, strlen(md), CMARK_OPT_DEFAULT) : NULL;
    /* cmark wraps inline text in <p>...</p>\n */
    const char *in = html ? html : "";
    size_t n = strlen(in);
    if (n >= 8 && !strncmp(in, "<p>", 3) && !strcmp(in + n - 5, "</p>\n")) { in += 3; n -= 8; }
    fprintf(fp, "<%s%s>%.*s</%s>", tag, cls, (int)n, in, tag);
    free(html);
    free(md);
}

void rpt_doc_table(rpt_doc *d, int ncols, const char *const *head)
{
    if (d->in_table) rpt_doc_table_end(d);
    d->in_table = 1;
    d->ncols = ncols;
    fputs("|", d->md);
    for (int i = 0; i < ncols; i++) { fputc(' ', d->md); md_text(d->md, head[i]); fputs(" |", d->md); }
    fputs("\n|", d->md);
    for (int i = 0; i < ncols; i++) fputs("---|", d->md);
    fputc('\n', d->md);
    /* CommonMark has no tables: an HTML block, its cells rendered by cmark */
    fputs("<table>\n<tr>", d->hmd);
    for (int i = 0; i < ncols; i++) html_cell(d->hmd, "th", "", head[i]);
    fputs("</tr>\n", d->hmd);
}

void rpt_doc_row(rpt_doc *d, const char *const *cells)
{
    fputs("|", d->md);
    for (int i = 0; i < d->ncols; i++) { fputc(' ', d->md); md_text(d->md, cells[i]); fputs(" |", d->md); }
    fputc('\n', d->md);
    fputs("<tr>", d->hmd);
    for (int i = 0; i < d->ncols; i++) {
        const char *c = cells[i];
        const char *cls = !strcmp(c, "holds") || !strcmp(c, "yes") ? " class=\"holds\""
                          : !strcmp(c, "does not hold") || !strcmp(c, "reversed") || !strcmp(c, "no")
                          ? " class=\"fails\"" : "";
        html_cell(d->hmd, "td", cls, c);
    }
    fputs("</tr>\n", d->hmd);
}

void rpt_doc_table_end(rpt_doc *d)
{
    if (!d->in_table) return;
    d->in_table = 0;
    fputc('\n', d->md);
    fputs("</table>\n\n", d->hmd);
}

void rpt_doc_pre(rpt_doc *d, const char *text)
{
    if (d->in_table) rpt_doc_table_end(d);
    both(d, "```\n");
    both(d, text);
    both(d, "\n```\n\n");
}

void rpt_doc_img(rpt_doc *d, const char *relpath, const char *alt)
{
    if (d->in_table) rpt_doc_table_end(d);
    both(d, "![");
    md_text(d->md, alt);
    md_text(d->hmd, alt);
    both(d, "](");
    both(d, relpath);
    both(d, ")\n\n");
}

/* base64 of a file, or NULL. */
static char *base64_file(const char *path)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *in = fopen(path, "rb");
    if (!in) return NULL;
    char *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len);
    if (!o) { fclose(in); return NULL; }
    unsigned char b[3];
    size_t n;
    while ((n = fread(b, 1, 3, in)) > 0) {
        unsigned v = (unsigned)b[0] << 16 | (n > 1 ? (unsigned)b[1] << 8 : 0) | (n > 2 ? b[2] : 0);
        fputc(tbl[(v >> 18) & 63], o);
        fputc(tbl[(v >> 12) & 63], o);
        fputc(n > 1 ? tbl[(v >> 6) & 63] : '=', o);
        fputc(n > 2 ? tbl[v & 63] : '=', o);
        if (n < 3) break;
    }
    fclose(in);
    fclose(o);
    return out;
}

static const char css[] =
    "*{box-sizing:border-box}\n"
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1280px;"
    "margin:2em auto;padding:0 1em;color:#222;line-height:1.45;overflow-wrap:break-word}\n"
    /* cells wrap at spaces, never inside a word ("recomputati on"): a
     * word longer than its cell breaks only where it would overflow
     * (break-word leaves the columns' minimum widths whole words, where
     * anywhere let the layout shrink them mid-word); a table wider than
     * the page scrolls sideways in its own box */
    "table{border-collapse:collapse;margin:1em 0;font-size:0.88em;display:block;overflow-x:auto;"
    "max-width:100%}\n"
    "th,td{border:1px solid #ccc;padding:0.3em 0.5em;text-align:left;vertical-align:top}\n"
    "td{overflow-wrap:break-word;word-break:normal;hyphens:manual;min-width:3.5em}\n"
    "th{background:#f2f2f2}\ntr:nth-child(even) td{background:#fafafa}\n"
    "td.holds{color:#176f2c;font-weight:600}td.fails{color:#b3261e;font-weight:600}\n"
    "img{width:100%;max-width:100%;height:auto;border:1px solid #ddd;margin:0.5em 0}\n"
    "code,pre{background:#f5f5f5;font-size:0.9em}pre{padding:0.6em;overflow-x:auto}\n";

int rpt_doc_end(rpt_doc *d, FILE *md, FILE *html, const char *dir, mb_err *err)
{
    if (d->in_table) rpt_doc_table_end(d);
    int ok = d->md && d->hmd;
    if (d->md) ok &= fclose(d->md) == 0;
    if (d->hmd) ok &= fclose(d->hmd) == 0;
    d->md = d->hmd = NULL;
    if (!md || !html) { /* discarded */
        free(d->md_buf);
        free(d->hmd_buf);
        d->md_buf = d->hmd_buf = NULL;
        return MB_OK;
    }
    if (!ok) return mb_err_set(err, MB_ERUN, "out of memory writing the report");
    fputs(d->md_buf, md);
    cmark_node *doc = cmark_parse_document(d->hmd_buf, d->hmd_len, CMARK_OPT_DEFAULT);
    if (!doc) return mb_err_set(err, MB_ERUN, "cmark could not parse the report");
    /* images: embedded as base64 PNG, so the page stands alone */
    cmark_iter *it = cmark_iter_new(doc);
    cmark_event_type ev;
    while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *n = cmark_iter_get_node(it);
        if (ev != CMARK_EVENT_ENTER || cmark_node_get_type(n) != CMARK_NODE_IMAGE) continue;
        char full[2048];
        rpt_path(full, sizeof full, dir, cmark_node_get_url(n));
        char *b64 = base64_file(full);
        if (!b64) continue; /* left as a relative link */
        size_t need = strlen(b64) + 32;
        char *url = malloc(need);
        if (url) {
            snprintf(url, need, "data:image/png;base64,%s", b64);
            cmark_node_set_url(n, url);
            free(url);
        }
        free(b64);
    }
    cmark_iter_free(it);
    /* raw HTML is ours (tables); every data string in it was escaped */
    char *body = cmark_render_html(doc, CMARK_OPT_UNSAFE);
    cmark_node_free(doc);
    if (!body) return mb_err_set(err, MB_ERUN, "cmark could not render the report");
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", html);
    for (const char *t = d->title; *t; t++) {
        if (*t == '<') fputs("&lt;", html);
        else if (*t == '&') fputs("&amp;", html);
        else fputc(*t, html);
    }
    fprintf(html, "</title>\n<style>\n%s</style>\n</head>\n<body>\n%s</body>\n</html>\n", css, body);
    free(body);
    free(d->md_buf);
    free(d->hmd_buf);
    d->md_buf = d->hmd_buf = NULL;
    return MB_OK;
}
