/* note_int.h — one formatted line to the note callback a measure/ caller
 * passes (measure's config, the spec request). Does not decide what is quiet:
 * each caller checks its own settings first. */
#ifndef MB_NOTE_INT_H
#define MB_NOTE_INT_H
#include <stdarg.h>

typedef void (*mb_meas_note_cb)(void *ctx, const char *level, const char *msg);

/* Formats fmt with ap (at most 1600 bytes, cut beyond) and calls note(ctx,
 * level, msg); nothing when note is NULL. mb_meas_vnote (protocol_int.h) is
 * this with a config's quiet setting. */
void mb_meas_note_to(mb_meas_note_cb note, void *ctx, const char *level, const char *fmt, va_list ap);
#endif
