/* err.c — formatting of error lines for mb_err, the edit distance behind
 * their "did you mean" suggestions, and text from files escaped for them. */
#include "model_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* A message longer than msg (a path of thousands of characters) keeps its
 * start and its end, where the reason is ("PATH: cannot write: ..."), and
 * loses the middle (of the path), marked " [...] ", in a line of about 1000
 * characters. */
int mb_err_set(mb_err *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w < sizeof err->msg) return code;
    char *full = malloc((size_t)w + 1);
    if (!full) return code; /* out of memory: the start only */
    va_start(ap, fmt);
    vsnprintf(full, (size_t)w + 1, fmt, ap);
    va_end(ap);
    static const char gap[] = " [...] ";
    size_t head = 240, tail = 760; /* a line of about 1000 characters */
    memcpy(err->msg, full, head);
    memcpy(err->msg + head, gap, sizeof gap - 1);
    memcpy(err->msg + head + sizeof gap - 1, full + (size_t)w - tail, tail + 1);
    free(full);
    return code;
}

/* Levenshtein distance, case-insensitive; strings longer than 63 characters
 * are compared on their first 63. */
int mb_edit_distance(const char *a, const char *b)
{
    enum { M = 64 };
    int la = 0, lb = 0;
    while (la < M - 1 && a[la]) la++;
    while (lb < M - 1 && b[lb]) lb++;
    int prev[M], cur[M];
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) !=
                                     tolower((unsigned char)b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
    }
    return prev[lb];
}

int mb_closest_word(const char *name, const char *list, char *buf, size_t size)
{
    int best = 3; /* at most two edits away */
    if (size) buf[0] = '\0';
    for (const char *p = list; p && *p;) {
        const char *end = strstr(p, ", ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char word[64];
        if (len < sizeof word) {
            memcpy(word, p, len);
            word[len] = '\0';
            int d = mb_edit_distance(name, word);
            if (d > 0 && d < best && 2 * (size_t)d <= strlen(name)) {
                best = d;
                snprintf(buf, size, "%s", word);
            }
        }
        p = end ? end + 2 : NULL;
    }
    return best < 3;
}

/* The byte of a control character (C0, DEL, or the second byte of a C1
 * character in UTF-8, 0xC2 0x80..0x9F) at s, 0 when s starts none. */
static size_t control_len(const unsigned char *s)
{
    if (*s < 0x20 || *s == 0x7f) return 1;
    if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) return 2;
    return 0;
}

size_t mb_text_escape(const char *s, char *buf, size_t size)
{
    size_t k = 0, written = 0;
    int cut = 0; /* whole characters only: no escape left half-written */
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t c = control_len(p);
        char one[9];
        size_t n;
        if (c == 2) n = (size_t)snprintf(one, sizeof one, "\\xc2\\x%02x", p[1]);
        else if (c == 1) n = (size_t)snprintf(one, sizeof one, "\\x%02x", p[0]);
        else one[0] = (char)*p, n = 1;
        if (buf && !cut && k + n < size) memcpy(buf + k, one, n), written = k + n;
        else cut = 1;
        k += n;
        p += c ? c : 1;
    }
    if (buf && size) buf[written] = '\0';
    return k;
}

char *mb_text_escape_dup(const char *s)
{
    size_t n = mb_text_escape(s, NULL, 0);
    char *d = malloc(n + 1);
    if (d) mb_text_escape(s, d, n + 1);
    return d;
}
