/* fig_mask.c — compares the alpha masks of a figure's layers, rendered on
 * a transparent background by tests/fig_overlap.sh (style.gp's mb_layer):
 *
 *   fig_mask data TEXT.png DATA.png   text (labels, legend box) against data
 *   fig_mask labels U1.png U2.png...  each text unit alone, pairwise
 *
 * A pixel belongs to a mask where its alpha is at least MASK_ALPHA (the
 * faint rim of antialiasing belongs to neither: two things that only touch
 * through it do not overlap). Each text mask is grown by one pixel, so a
 * line running between two glyphs of a word, or two labels abutting, still
 * meets it. An overlap is MIN_OVERLAP_PX pixels or more (fewer are a
 * rounding at the end of a glyph's stroke). 'data' also fails on text
 * touching the canvas's edge (cut off). Exit 0: no overlap; 1: overlap,
 * one line each naming the masks and the box where they meet; 2: bad input. */
#include <png.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK_ALPHA 100
#define MIN_OVERLAP_PX 4

typedef struct mask {
    int w, h;
    unsigned char *on; /* w*h, 1 where the mask is */
} mask;

/* Reads path's alpha into m (thresholded). 0, or 2 after one line. */
static int read_mask(const char *path, mask *m)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path)) {
        fprintf(stderr, "fig_mask: %s: %s\n", path, img.message);
        return 2;
    }
    img.format = PNG_FORMAT_RGBA;
    size_t n = PNG_IMAGE_SIZE(img);
    unsigned char *px = malloc(n);
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        fprintf(stderr, "fig_mask: %s: %s\n", path, px ? img.message : "out of memory");
        free(px);
        png_image_free(&img);
        return 2;
    }
    m->w = (int)img.width;
    m->h = (int)img.height;
    m->on = malloc((size_t)m->w * (size_t)m->h);
    if (!m->on) { free(px); return 2; }
    for (size_t i = 0; i < (size_t)m->w * (size_t)m->h; i++) m->on[i] = px[4 * i + 3] >= MASK_ALPHA;
    free(px);
    return 0;
}

/* m grown by one pixel (8-neighbourhood), in place. */
static void grow(mask *m)
{
    unsigned char *g = calloc((size_t)m->w * (size_t)m->h, 1);
    if (!g) return;
    for (int y = 0; y < m->h; y++)
        for (int x = 0; x < m->w; x++) {
            if (!m->on[(size_t)y * m->w + x]) continue;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if (yy >= 0 && yy < m->h && xx >= 0 && xx < m->w) g[(size_t)yy * m->w + xx] = 1;
                }
        }
    free(m->on);
    m->on = g;
}

/* The pixels where a and b meet, and their bounding box. */
static long meet(const mask *a, const mask *b, int box[4])
{
    long n = 0;
    box[0] = box[1] = 1 << 30;
    box[2] = box[3] = -1;
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w; x++) {
            size_t i = (size_t)y * a->w + x;
            if (!a->on[i] || !b->on[i]) continue;
            n++;
            if (x < box[0]) box[0] = x;
            if (y < box[1]) box[1] = y;
            if (x > box[2]) box[2] = x;
            if (y > box[3]) box[3] = y;
        }
    return n;
}

static long count(const mask *m)
{
    long n = 0;
    for (size_t i = 0; i < (size_t)m->w * (size_t)m->h; i++) n += m->on[i];
    return n;
}

static int check_data(const char *text_path, const char *data_path)
{
    mask t, d;
    if (read_mask(text_path, &t) || read_mask(data_path, &d)) return 2;
    if (t.w != d.w || t.h != d.h) {
        fprintf(stderr, "fig_mask: %s and %s differ in size\n", text_path, data_path);
        return 2;
    }
    if (!count(&t) || !count(&d)) {
        fprintf(stderr, "fig_mask: %s: an empty layer (text %ld px, data %ld px): nothing compared\n",
                data_path, count(&t), count(&d));
        return 1;
    }
    int rc = 0, box[4];
    long edge = 0;
    for (int x = 0; x < t.w; x++) edge += t.on[x] + t.on[(size_t)(t.h - 1) * t.w + x];
    for (int y = 0; y < t.h; y++) edge += t.on[(size_t)y * t.w] + t.on[(size_t)y * t.w + t.w - 1];
    if (edge >= MIN_OVERLAP_PX) {
        printf("%s: text cut off at the canvas's edge (%ld px)\n", text_path, edge);
        rc = 1;
    }
    grow(&t);
    long n = meet(&t, &d, box);
    if (n >= MIN_OVERLAP_PX) {
        printf("%s: text over data: %ld px in x %d-%d, y %d-%d\n", text_path, n, box[0], box[2], box[1],
               box[3]);
        rc = 1;
    }
    free(t.on);
    free(d.on);
    return rc;
}

static int check_labels(int n, char **paths)
{
    mask *m = calloc((size_t)n, sizeof *m);
    if (!m) return 2;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = read_mask(paths[i], &m[i]);
        if (!rc && (m[i].w != m[0].w || m[i].h != m[0].h)) {
            fprintf(stderr, "fig_mask: %s differs in size from %s\n", paths[i], paths[0]);
            rc = 2;
        }
        if (!rc) grow(&m[i]);
    }
    for (int i = 0; i < n && rc != 2; i++)
        for (int j = i + 1; j < n; j++) {
            int box[4];
            long px = meet(&m[i], &m[j], box);
            if (px >= MIN_OVERLAP_PX) {
                printf("%s and %s: labels overlap: %ld px in x %d-%d, y %d-%d\n", paths[i], paths[j], px,
                       box[0], box[2], box[1], box[3]);
                rc = 1;
            }
        }
    for (int i = 0; i < n; i++) free(m[i].on);
    free(m);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "data")) return check_data(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "labels")) return check_labels(argc - 2, argv + 2);
    fprintf(stderr, "usage: fig_mask data TEXT.png DATA.png | fig_mask labels UNIT.png...\n");
    return 2;
}
