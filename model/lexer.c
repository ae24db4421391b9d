/* lexer.c — tokens of the variant language, with line and column.
 * Python's number syntax; '#' comments; newlines are tokens: "\n", "\r\n"
 * and a lone "\r" (old Mac files) each end a line, as in Python. */
#include "model_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb_lex_init(mb_lexer *lx, const char *src)
{
    memset(lx, 0, sizeof *lx);
    lx->src = lx->p = lx->line_start = src;
    lx->line = 1;
    mb_lex_next(lx);
}

static void set(mb_lexer *lx, mb_tok_kind k, const char *start, int len)
{
    lx->tok.kind = k;
    lx->tok.start = start;
    lx->tok.len = len;
    lx->tok.line = lx->line;
    lx->tok.col = (int)(start - lx->line_start) + 1;
}

/* Length of the line end at p ("\n", "\r\n" or a lone "\r"), 0 if none. */
static int eol_len(const char *p)
{
    if (*p == '\n') return 1;
    if (*p == '\r') return p[1] == '\n' ? 2 : 1;
    return 0;
}

void mb_lex_next(mb_lexer *lx)
{
    const char *p = lx->p;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#') {
            while (*p && !eol_len(p)) p++;
            continue;
        }
        if (*p == '\\' && eol_len(p + 1)) { /* explicit line joining */
            p += 1 + eol_len(p + 1);
            lx->line++;
            lx->line_start = p;
            continue;
        }
        if (eol_len(p) && lx->paren_depth > 0) { /* implicit line joining */
            p += eol_len(p);
            lx->line++;
            lx->line_start = p;
            continue;
        }
        break;
    }
    const char *s = p;
    if (*p == '\0') { set(lx, TK_EOF, s, 0); lx->p = p; return; }
    if (eol_len(p)) {
        set(lx, TK_NEWLINE, s, 1);
        lx->p = p + eol_len(p);
        lx->line++;
        lx->line_start = lx->p;
        return;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        char *end;
        double v = strtod(p, &end);
        /* strtod accepts hex and "inf": the language takes decimal only. */
        int bad = 0;
        for (const char *q = p; q < end; q++)
            if (!(isdigit((unsigned char)*q) || *q == '.' || *q == 'e' || *q == 'E' ||
                  *q == '+' || *q == '-')) bad = 1;
        if (isalpha((unsigned char)*end) || *end == '_' || bad) {
            while (isalnum((unsigned char)*end) || *end == '_' || *end == '.') end++;
            set(lx, TK_BAD, s, (int)(end - s));
        } else {
            set(lx, TK_NUM, s, (int)(end - s));
            lx->tok.num = v;
        }
        lx->p = end;
        return;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        set(lx, TK_ID, s, (int)(p - s));
        lx->p = p;
        return;
    }
    mb_tok_kind k = TK_BAD;
    int len = 1;
    switch (*p) {
    case '+': k = TK_PLUS; break;
    case '-': k = TK_MINUS; break;
    case '*': if (p[1] == '*') { k = TK_POW; len = 2; } else k = TK_STAR; break;
    case '/': k = TK_SLASH; break;
    case '(': k = TK_LPAREN; lx->paren_depth++; break;
    case ')': k = TK_RPAREN; if (lx->paren_depth > 0) lx->paren_depth--; break;
    case '[': k = TK_LBRACK; lx->paren_depth++; break;
    case ']': k = TK_RBRACK; if (lx->paren_depth > 0) lx->paren_depth--; break;
    case '.': k = TK_DOT; break;
    case '@': k = TK_AT; break;
    case '=': k = TK_ASSIGN; break;
    case ',': k = TK_COMMA; break;
    case ';': k = TK_SEMI; break;
    default:
        /* one whole UTF-8 character in the message */
        if ((unsigned char)*p >= 0x80)
            while ((unsigned char)p[len] >= 0x80 && (unsigned char)p[len] < 0xC0) len++;
        break;
    }
    set(lx, k, s, len);
    lx->p = p + len;
}

const char *mb_tok_desc(const mb_token *t, char *buf, int bufsize)
{
    switch (t->kind) {
    case TK_EOF: snprintf(buf, (size_t)bufsize, "end of input"); break;
    case TK_NEWLINE: snprintf(buf, (size_t)bufsize, "end of line"); break;
    default: snprintf(buf, (size_t)bufsize, "'%.*s'", t->len > 40 ? 40 : t->len, t->start); break;
    }
    return buf;
}

void mb_lex_rest_of_line(mb_lexer *lx, char *buf, int bufsize)
{
    const char *s = lx->tok.start, *p = s;
    while (*p && !eol_len(p) && *p != '#') p++;
    const char *e = p;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    int len = (int)(e - s);
    if (len >= bufsize) len = bufsize - 1;
    memcpy(buf, s, (size_t)len);
    buf[len] = '\0';
    while (*p && !eol_len(p)) p++;
    lx->p = p;
    mb_lex_next(lx);
}
