/* SPDX-License-Identifier: Apache-2.0 */
/* HttpHandles: the count of the server's uv handles not yet through their close callback.
 * Connections, watches (request.c), the guard's check and timer (guard.c) and the server's own
 * handles each count in it; every close callback reports here, and the owner learns of it
 * through on_closed. */
#include <assert.h>

#include "http/http-internal.h"

void http_handles_closed(HttpHandles *h) {
        assert(h->n_open > 0);
        h->n_open--;
        if (h->on_closed)
                h->on_closed(h->userdata);
}
