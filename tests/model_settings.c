/* model_settings.c — the model library reads no environment variable: the
 * built-in variants' folder is the one the caller sets (mb_variant_set_dir,
 * the CLI passing $MEMBOUND_VARIANTS), whatever the environment says, and
 * the default search again when it is unset. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "membound_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char dir[] = "/tmp/mb-settings-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char path[600];
    snprintf(path, sizeof path, "%s/only_here.mb", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fputs("name only_here\ninput x\ny = x * 3\noutput y\n", f);
    fclose(f);

    /* the environment names that folder: not read */
    setenv("MEMBOUND_VARIANTS", dir, 1);
    const char *def = mb_variant_dir();
    CHECK(strcmp(def, dir) != 0);
    mb_graph *g = NULL;
    mb_err e;
    CHECK(mb_variant_load("only_here", MB_F32, &g, &e) == MB_EINPUT);
    CHECK(g == NULL);

    /* set by the caller: used */
    mb_variant_set_dir(dir);
    CHECK(!strcmp(mb_variant_dir(), dir));
    CHECK(mb_variant_load("only_here", MB_F32, &g, &e) == MB_OK);
    if (g) CHECK(!strcmp(g->name, "only_here"));
    mb_graph_free(g);
    char names[64][MB_NAME_MAX];
    CHECK(mb_variant_list(names, 64) == 1 && !strcmp(names[0], "only_here"));

    /* unset (NULL or ""): the default search again */
    mb_variant_set_dir("");
    CHECK(!strcmp(mb_variant_dir(), def));
    mb_variant_set_dir(NULL);
    CHECK(!strcmp(mb_variant_dir(), def));

    unlink(path);
    rmdir(dir);
    return mb_test_done();
}
