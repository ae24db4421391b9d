/* doc.c — one document written as Markdown and as self-contained HTML at
 * once (headings, paragraphs, tables, images embedded as base64 PNG), plus
 * small number formatting helpers. Does not decide what a report says. */
#include "report_int.h"

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

static void html_esc(FILE *fp, const char *s)
{
    int code = 0, bold = 0;
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", fp); break;
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '"': fputs("&quot;", fp); break;
        case '`': fputs(code ? "</code>" : "<code>", fp); code = !code; break;
        case '*':
            if (s[1] == '*') { /* **bold** */
                fputs(bold ? "</b>" : "<b>", fp);
                bold = !bold;
                s++;
            } else {
                fputc('*', fp);
            }
            break;
        default: fputc(*s, fp);
        }
    }
    if (code) fputs("</code>", fp);
    if (bold) fputs("</b>", fp);
}

/* Markdown table cells may not hold '|' or newlines. */
static void md_cell(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", fp);
        else if (*s == '\n') fputc(' ', fp);
        else fputc(*s, fp);
    }
}

void rpt_doc_begin(rpt_doc *d, const char *title)
{
    d->in_table = 0;
    fprintf(d->md, "# %s\n\n", title);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", d->html);
    html_esc(d->html, title);
    fputs("</title>\n<style>\n"
          "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;"
          "margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n"
          "table{border-collapse:collapse;margin:1em 0;font-size:0.92em}\n"
          "th,td{border:1px solid #ccc;padding:0.3em 0.6em;text-align:left;vertical-align:top}\n"
          "th{background:#f2f2f2}\ntr:nth-child(even) td{background:#fafafa}\n"
          "td.holds{color:#176f2c;font-weight:600}td.fails{color:#b3261e;font-weight:600}\n"
          "img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}\n"
          "code,pre{background:#f5f5f5;font-size:0.9em}pre{padding:0.6em;overflow-x:auto}\n"
          "</style>\n</head>\n<body>\n<h1>", d->html);
    html_esc(d->html, title);
    fputs("</h1>\n", d->html);
}

void rpt_doc_end(rpt_doc *d)
{
    if (d->in_table) rpt_doc_table_end(d);
    fputs("</body>\n</html>\n", d->html);
}

void rpt_doc_h(rpt_doc *d, int level, const char *text)
{
    if (d->in_table) rpt_doc_table_end(d);
    fprintf(d->md, "%.*s %s\n\n", level, "######", text);
    fprintf(d->html, "<h%d>", level);
    html_esc(d->html, text);
    fprintf(d->html, "</h%d>\n", level);
}

void rpt_doc_p(rpt_doc *d, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (d->in_table) rpt_doc_table_end(d);
    fprintf(d->md, "%s\n\n", buf);
    fputs("<p>", d->html);
    html_esc(d->html, buf);
    fputs("</p>\n", d->html);
}

void rpt_doc_table(rpt_doc *d, int ncols, const char *const *head)
{
    if (d->in_table) rpt_doc_table_end(d);
    d->in_table = 1;
    d->ncols = ncols;
    fputs("|", d->md);
    for (int i = 0; i < ncols; i++) { fputc(' ', d->md); md_cell(d->md, head[i]); fputs(" |", d->md); }
    fputs("\n|", d->md);
    for (int i = 0; i < ncols; i++) fputs("---|", d->md);
    fputc('\n', d->md);
    fputs("<table>\n<tr>", d->html);
    for (int i = 0; i < ncols; i++) {
        fputs("<th>", d->html);
        html_esc(d->html, head[i]);
        fputs("</th>", d->html);
    }
    fputs("</tr>\n", d->html);
}

void rpt_doc_row(rpt_doc *d, const char *const *cells)
{
    fputs("|", d->md);
    for (int i = 0; i < d->ncols; i++) { fputc(' ', d->md); md_cell(d->md, cells[i]); fputs(" |", d->md); }
    fputc('\n', d->md);
    fputs("<tr>", d->html);
    for (int i = 0; i < d->ncols; i++) {
        const char *c = cells[i];
        const char *cls = !strcmp(c, "holds") || !strcmp(c, "yes") ? " class=\"holds\""
                          : !strcmp(c, "does not hold") || !strcmp(c, "no") ? " class=\"fails\"" : "";
        fprintf(d->html, "<td%s>", cls);
        html_esc(d->html, c);
        fputs("</td>", d->html);
    }
    fputs("</tr>\n", d->html);
}

void rpt_doc_table_end(rpt_doc *d)
{
    if (!d->in_table) return;
    d->in_table = 0;
    fputc('\n', d->md);
    fputs("</table>\n", d->html);
}

void rpt_doc_pre(rpt_doc *d, const char *text)
{
    if (d->in_table) rpt_doc_table_end(d);
    fprintf(d->md, "```\n%s\n```\n\n", text);
    fputs("<pre>", d->html);
    for (const char *s = text; *s; s++) {
        if (*s == '<') fputs("&lt;", d->html);
        else if (*s == '>') fputs("&gt;", d->html);
        else if (*s == '&') fputs("&amp;", d->html);
        else fputc(*s, d->html);
    }
    fputs("</pre>\n", d->html);
}

static void base64(FILE *out, FILE *in)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char b[3];
    size_t n;
    int col = 0;
    while ((n = fread(b, 1, 3, in)) > 0) {
        unsigned v = (unsigned)b[0] << 16 | (n > 1 ? (unsigned)b[1] << 8 : 0) | (n > 2 ? b[2] : 0);
        fputc(tbl[(v >> 18) & 63], out);
        fputc(tbl[(v >> 12) & 63], out);
        fputc(n > 1 ? tbl[(v >> 6) & 63] : '=', out);
        fputc(n > 2 ? tbl[v & 63] : '=', out);
        if ((col += 4) >= 76) { fputc('\n', out); col = 0; }
        if (n < 3) break;
    }
}

void rpt_doc_img(rpt_doc *d, const char *dir, const char *relpath, const char *alt)
{
    if (d->in_table) rpt_doc_table_end(d);
    fprintf(d->md, "![%s](%s)\n\n", alt, relpath);
    char full[2048];
    rpt_path(full, sizeof full, dir, relpath);
    FILE *in = fopen(full, "rb");
    if (!in) {
        fputs("<p><em>figure not drawn: ", d->html);
        html_esc(d->html, relpath);
        fputs("</em></p>\n", d->html);
        return;
    }
    fputs("<figure><img alt=\"", d->html);
    html_esc(d->html, alt);
    fputs("\" src=\"data:image/png;base64,\n", d->html);
    base64(d->html, in);
    fclose(in);
    fputs("\"><figcaption>", d->html);
    html_esc(d->html, alt);
    fputs("</figcaption></figure>\n", d->html);
}
