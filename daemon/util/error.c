/* SPDX-License-Identifier: Apache-2.0 */
/* Error message helpers (see error.h). */
#include <stdio.h>
#include <string.h>

#include "util/error.h"

int error_set(Error *e, int code, const char *fmt, ...) {
        va_list ap;

        if (!e)
                return code;
        va_start(ap, fmt);
        (void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
        va_end(ap);
        return code;
}

int error_prefix(Error *e, int code, const char *fmt, ...) {
        char old[sizeof(e->message)];
        size_t n, room;
        va_list ap;
        int m;

        if (!e)
                return code;
        memcpy(old, e->message, sizeof(old));
        old[sizeof(old) - 1] = 0;
        va_start(ap, fmt);
        m = vsnprintf(e->message, sizeof(e->message), fmt, ap);
        va_end(ap);
        if (m < 0)
                return code;
        n = strnlen(e->message, sizeof(e->message) - 1);
        /* Append ": " and the old text, cutting at the end of the fixed buffer. */
        room = sizeof(e->message) - 1 - n;
        for (const char *s = ": "; *s && room > 0; s++, room--)
                e->message[n++] = *s;
        m = (int)strnlen(old, room);
        memcpy(e->message + n, old, (size_t)m);
        e->message[n + (size_t)m] = 0;
        return code;
}
