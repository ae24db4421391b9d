/* variants.c — finding and loading variants: built-ins by name from the
 * share directory, any file by path, --expr strings; and the one naming
 * policy, that a variant of one's own may not take a built-in's name.
 * Does not parse (parser.c). */
#include "model_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MB_VARIANT_INSTALL_DIR
#define MB_VARIANT_INSTALL_DIR "/usr/local/share/membound/variants"
#endif

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder the caller set (mb_variant_set_dir; the CLI passes
 * $MEMBOUND_VARIANTS): this library reads no environment variable. */
static char set_dir[1024];

void mb_variant_set_dir(const char *dir)
{
    snprintf(set_dir, sizeof set_dir, "%s", dir ? dir : "");
}

const char *mb_variant_dir(void)
{
    static char dir[1024];
    if (set_dir[0]) return set_dir;
    /* next to the binary: <prefix>/bin/membound -> <prefix>/share/membound/variants */
    char exe[900];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(dir, sizeof dir, "%s/../share/membound/variants", exe);
            if (is_dir(dir)) return dir;
        }
    }
    return MB_VARIANT_INSTALL_DIR;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int mb_variant_list(char names[][MB_NAME_MAX], int max)
{
    DIR *d = opendir(mb_variant_dir());
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".mb") != 0 || len - 3 >= MB_NAME_MAX) continue;
        if (count < max) {
            memcpy(names[count], e->d_name, len - 3);
            names[count][len - 3] = '\0';
        }
        count++;
    }
    closedir(d);
    if (max > 0 && count > 0) qsort(names, (size_t)(count < max ? count : max), MB_NAME_MAX, cmp_names);
    return count;
}

static char *read_file(const char *path, mb_err *err)
{
    char *buf = NULL;
    return mb_text_read(path, (size_t)16 << 20, &buf, NULL, err) == MB_OK ? buf : NULL;
}

/* The text of the built-in variant name (malloc'd), or NULL when there is
 * none of that name. */
static char *builtin_text(const char *name)
{
    if (!name[0] || strchr(name, '/') || name[0] == '.') return NULL;
    char path[1100];
    snprintf(path, sizeof path, "%s/%s.mb", mb_variant_dir(), name);
    if (access(path, R_OK) != 0) return NULL;
    mb_err e;
    return read_file(path, &e);
}

/* The naming policy, for the graph *out parsed from text (NULL for an
 * --expr string) found at where: a variant of one's own named like a
 * built-in (by its 'name' line or, for a file, by its file name) would stand
 * in for it, and report judges the lecture's claims by the name. Refused
 * (*out freed); a copy of the built-in's text is the built-in. */
static int check_name(mb_graph **out, const char *text, const char *where, mb_err *err)
{
    const mb_graph *g = *out;
    char *builtin = builtin_text(g->name);
    int rc = MB_OK;
    if (builtin && (!text || strcmp(builtin, text) != 0)) {
        if (!text)
            mb_err_set(err, MB_EINPUT, "%s:%d:%d: variant name '%s' is a built-in's: give the "
                       "expression another name (report judges the lecture's claims by name)",
                       where, g->name_line, g->name_col, g->name);
        else if (g->name_line)
            mb_err_set(err, MB_EINPUT, "%s:%d:%d: variant name '%s' is a built-in's: give yours "
                       "another name (report judges the lecture's claims by name)", where,
                       g->name_line, g->name_col, g->name);
        else
            mb_err_set(err, MB_EINPUT, "%s: variant name '%s' (from the file name) is a built-in's: "
                       "add a 'name' line with another name (report judges the lecture's claims "
                       "by name)", where, g->name);
        mb_graph_free(*out);
        *out = NULL;
        rc = MB_EINPUT;
    }
    free(builtin);
    return rc;
}

int mb_variant_load(const char *name_or_path, mb_dtype dtype, mb_graph **out, mb_err *err)
{
    char path[1100];
    size_t len = strlen(name_or_path);
    int is_path = strchr(name_or_path, '/') || (len > 3 && !strcmp(name_or_path + len - 3, ".mb"));
    if (is_path) {
        snprintf(path, sizeof path, "%s", name_or_path);
    } else {
        snprintf(path, sizeof path, "%s/%s.mb", mb_variant_dir(), name_or_path);
        if (access(path, R_OK) != 0) {
            char names[64][MB_NAME_MAX];
            int n = mb_variant_list(names, 64);
            char list[1024] = "";
            for (int i = 0; i < n && i < 64; i++) {
                if (strlen(list) + strlen(names[i]) + 2 >= sizeof list) break;
                strcat(list, names[i]);
                if (i + 1 < n) strcat(list, ", ");
            }
            if (n == 0)
                return mb_err_set(err, MB_EINPUT, "unknown variant '%s' (no built-in variants found in %s; "
                                  "set MEMBOUND_VARIANTS)", name_or_path, mb_variant_dir());
            char near[MB_NAME_MAX];
            if (mb_closest_word(name_or_path, list, near, sizeof near))
                return mb_err_set(err, MB_EINPUT, "unknown variant '%s' (did you mean '%s'?; variants: %s; or "
                                  "give a .mb file or --expr)", name_or_path, near, list);
            return mb_err_set(err, MB_EINPUT, "unknown variant '%s' (variants: %s; or give a .mb file or --expr)",
                              name_or_path, list);
        }
    }
    char *text = read_file(path, err);
    if (!text) return MB_EINPUT;
    int rc = mb_parse_variant(text, is_path ? name_or_path : path, dtype, out, err);
    if (rc == MB_OK && is_path) rc = check_name(out, text, name_or_path, err);
    free(text);
    return rc;
}

int mb_parse_expr(const char *expr, mb_dtype dtype, mb_graph **out, mb_err *err)
{
    int rc = mb_parse_expr_text(expr, dtype, out, err);
    /* an expression takes a name only from a 'name' line ('name copy' would
     * stand in for the built-in copy) */
    if (rc == MB_OK && (*out)->name_line) rc = check_name(out, NULL, "<expr>", err);
    return rc;
}
