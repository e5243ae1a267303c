/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl multi on libuv (see curl_uv.h): curl tells us which sockets and which timeout to
 * watch, the loop tells curl what happened, via curl_multi_socket_action() only. It owns the
 * multi handle, the easy handles, one uv_poll_t per socket and one uv_timer_t. It never spins
 * curl_multi_perform() and never logs: outcomes go back to the caller. */
#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/curl_uv.h"
#include "util/buf.h"
#include "util/cleanup.h"

typedef struct CurlUvSocket CurlUvSocket;
typedef struct CurlUvTransfer CurlUvTransfer;

/* One socket curl asked us to watch. Owned by CurlUv's socket list until curl says
 * CURL_POLL_REMOVE (or the close); freed by its poll handle's close callback. */
struct CurlUvSocket {
        uv_poll_t poll;
        CurlUv *owner;
        curl_socket_t fd;
        int events; /* what curl last asked for, to re-arm after a poll error */
        CurlUvSocket *prev, *next;
};

/* One request. Owned by CurlUv from curl_uv_send() until its callback has returned; on the
 * `transfers` list while curl runs it, on `cancelled` between curl_uv_close() and the
 * -ECANCELED callback. */
struct CurlUvTransfer {
        CurlUv *owner;
        CURL *easy;
        struct curl_slist *headers;
        Buf body;        /* its max: the larger of the two limits below */
        size_t max_body; /* a 2xx answer's body limit, the request's */
        int body_error;
        /* Counted by CURLOPT_PREREQFUNCTION, which curl calls once a connection is ready and
         * just before it writes the request: at 0 no byte can have reached the server. Above 1,
         * curl resent the request on a fresh connection after a reused one died unanswered. */
        unsigned n_sends;
        int socket_error; /* we could not watch one of its sockets; failed by the reaper */
        char errbuf[CURL_ERROR_SIZE];
        CurlUvCallback cb;
        void *userdata;
        CurlUvTransfer *prev, *next;
};

struct CurlUv {
        uv_loop_t *loop;
        CURLM *multi;
        uv_timer_t timer;
        unsigned n_open_handles; /* the timer and each socket's poll, until closed */
        bool is_closing;
        bool is_global_initialized;

        CurlUvSocket *sockets;
        CurlUvTransfer *transfers;
        CurlUvTransfer *cancelled;

        /* Finished easy handles, kept for reuse: curl_easy_reset() keeps their TLS session and
         * DNS caches. The connections themselves live in the multi handle's cache. */
        CURL **idle;
        size_t n_idle;
        size_t max_idle;
        uint64_t n_connections;

        char *ca_file;
        char *user_agent;
        bool tls_verify;
        bool decode_content;
        long connect_timeout_ms;
        long request_timeout_ms;
        size_t max_response_bytes;
        size_t max_error_body_bytes;

        void (*close_done)(void *userdata);
        void *close_userdata;
};

/* The only translation of libcurl's codes into ours. */
static int curl_code_to_errno(CURLcode code) {
        switch (code) {
        case CURLE_OK:
                return 0;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_UNKNOWN_OPTION:
        case CURLE_NOT_BUILT_IN:
        case CURLE_UNSUPPORTED_PROTOCOL:
                return -EOPNOTSUPP;
        default:
                return -EINVAL;
        }
}

static int curl_mcode_to_errno(CURLMcode code) {
        switch (code) {
        case CURLM_OK:
                return 0;
        case CURLM_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLM_UNKNOWN_OPTION:
                return -EOPNOTSUPP;
        default:
                return -EINVAL;
        }
}

static void transfer_list_remove(CurlUvTransfer **head, CurlUvTransfer *t) {
        if (t->prev)
                t->prev->next = t->next;
        else
                *head = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
}

/* Appends, so that cancelled transfers are reported in the order they were sent. */
static void transfer_list_append(CurlUvTransfer **head, CurlUvTransfer *t) {
        CurlUvTransfer *last = *head;

        t->next = NULL;
        if (!last) {
                t->prev = NULL;
                *head = t;
                return;
        }
        while (last->next)
                last = last->next;
        last->next = t;
        t->prev = last;
}

static CurlUv *curl_uv_free(CurlUv *cu) {
        if (!cu)
                return NULL;
        assert(!cu->sockets && !cu->transfers && !cu->cancelled && cu->n_open_handles == 0);
        /* Order from libcurl's docs: easy handles out of the multi (done), multi cleanup (closes
         * the cached connections), then the easy handles. */
        if (cu->multi)
                (void)curl_multi_cleanup(cu->multi);
        for (size_t i = 0; i < cu->n_idle; i++)
                curl_easy_cleanup(cu->idle[i]);
        free(cu->idle);
        free(cu->ca_file);
        free(cu->user_agent);
        if (cu->is_global_initialized)
                curl_global_cleanup();
        free(cu);
        return NULL;
}

DEFINE_CLEANUP_FUNC(CurlUv, curl_uv_free);

/* Gives the easy handle back to the idle pool and frees the rest. */
static CurlUvTransfer *curl_uv_transfer_free(CurlUvTransfer *t) {
        CurlUv *cu;

        if (!t)
                return NULL;
        cu = t->owner;
        if (t->easy) {
                if (cu->n_idle < cu->max_idle) {
                        curl_easy_reset(t->easy);
                        cu->idle[cu->n_idle++] = t->easy;
                } else {
                        curl_easy_cleanup(t->easy);
                }
        }
        curl_slist_free_all(t->headers);
        buf_deinit(&t->body);
        free(t);
        return NULL;
}

DEFINE_CLEANUP_FUNC(CurlUvTransfer, curl_uv_transfer_free);

static void curl_uv_maybe_free(CurlUv *cu) {
        void (*done)(void *userdata);
        void *userdata;

        if (!cu->is_closing || cu->n_open_handles > 0)
                return;
        done = cu->close_done;
        userdata = cu->close_userdata;
        curl_uv_free(cu);
        if (done)
                done(userdata);
}

static void curl_uv_on_socket_closed(uv_handle_t *handle) {
        CurlUvSocket *s = handle->data;
        CurlUv *cu = s->owner;

        free(s);
        assert(cu->n_open_handles > 0);
        cu->n_open_handles--;
        curl_uv_maybe_free(cu);
}

static void curl_uv_socket_close(CurlUvSocket *s) {
        CurlUv *cu = s->owner;

        if (s->prev)
                s->prev->next = s->next;
        else
                cu->sockets = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        /* uv_close() stops the poll at once (epoll_ctl DEL), before curl closes the fd. */
        uv_close((uv_handle_t *)&s->poll, curl_uv_on_socket_closed);
}

static void curl_uv_transfer_finish(CurlUvTransfer *t, CURLcode result) {
        CurlUv *cu = t->owner;
        CurlUvResponse response = { .error = "", .content_length = -1 };
        long http_status = 0, n_connects = 0;
        curl_off_t content_length = -1;
        struct curl_header *content_range = NULL;

        (void)curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &http_status);
        (void)curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &content_length);
        response.content_length = content_length;
        /* Valid until the handle is cleaned up, after the callback. */
        if (curl_easy_header(t->easy, "Content-Range", 0, CURLH_HEADER, -1, &content_range) ==
            CURLHE_OK)
                response.content_range = content_range->value;
        (void)curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &n_connects);
        if (n_connects > 0)
                cu->n_connections += (uint64_t)n_connects;
        (void)curl_multi_remove_handle(cu->multi, t->easy);
        transfer_list_remove(&cu->transfers, t);
        /* Refused by its Content-Length before a byte of it was read: as a body we dropped. */
        if (result == CURLE_FILESIZE_EXCEEDED && t->body_error == 0)
                t->body_error = -E2BIG;

        if (result == CURLE_OK || (t->body_error < 0 && http_status > 0)) {
                /* A body we had to drop still came with a status line: for a commit, the
                 * status is the verdict. */
                response.status = 0;
                response.http_status = http_status;
                response.n_sends = t->n_sends;
                response.body_error = t->body_error;
                if (t->body_error == 0) {
                        response.body = slice_make(buf_str(&t->body), t->body.len);
                        response.body_buf = &t->body;
                }
        } else {
                /* A timeout, reset or EOF after the request may have left is a request the
                 * server may have acted on; only failures before PREREQFUNCTION are not. */
                response.status = t->n_sends > 0 ? CURL_UV_E_NO_RESPONSE : CURL_UV_E_NOT_SENT;
                response.n_sends = t->n_sends;
                response.error = t->errbuf[0] ? t->errbuf : curl_easy_strerror(result);
        }
        if (response.status == 0)
                response.body = response.body.ptr ? response.body : slice_make("", 0);

        t->cb(&response, t->userdata);
        curl_uv_transfer_free(t);
}

/* Hands every finished transfer to its owner. Stops when a callback closed us: the multi
 * handle then holds no transfer any more. */
static void curl_uv_collect(CurlUv *cu) {
        CURLMsg *msg;
        int n_left;

        while (!cu->is_closing && (msg = curl_multi_info_read(cu->multi, &n_left))) {
                char *private = NULL;
                CURLcode result;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                result = msg->data.result;
                (void)curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &private);
                assert(private);
                curl_uv_transfer_finish((CurlUvTransfer *)(void *)private, result);
        }
}

/* Fails, outside of curl, the transfers whose sockets we could not watch. */
static void curl_uv_reap_broken(CurlUv *cu) {
        while (!cu->is_closing) {
                CurlUvTransfer *t = cu->transfers;

                while (t && t->socket_error == 0)
                        t = t->next;
                if (!t)
                        return;
                (void)snprintf(t->errbuf, sizeof(t->errbuf), "cannot watch the connection: %s",
                               strerror(-t->socket_error));
                curl_uv_transfer_finish(t, CURLE_RECV_ERROR);
        }
}

static void curl_uv_on_poll(uv_poll_t *handle, int status, int events) {
        CurlUvSocket *s = handle->data;
        CurlUv *cu = s->owner;
        curl_socket_t fd = s->fd;
        int flags = 0, n_running;

        /* A poll error (a reset socket) is handed to curl as "readable and writable", not as
         * CURL_CSELECT_ERR: curl then reads the socket itself and sees the real failure
         * (ECONNRESET), which it reports precisely and, on a reused connection, may answer by
         * resending on a fresh one (counted by the transfer's n_sends). */
        if (status < 0)
                flags = CURL_CSELECT_IN | CURL_CSELECT_OUT;
        else {
                if (events & UV_READABLE)
                        flags |= CURL_CSELECT_IN;
                if (events & UV_WRITABLE)
                        flags |= CURL_CSELECT_OUT;
        }
        /* s may be freed inside (CURL_POLL_REMOVE); only cu is used afterwards. A failure here
         * is not tied to one transfer; curl reports the affected ones through info_read. */
        (void)curl_multi_socket_action(cu->multi, fd, flags, &n_running);
        if (status < 0)
                /* libuv stopped the handle on the error; if curl still watches the socket
                 * without having asked again, re-arm it or the transfer would only end by
                 * its timeout. */
                for (CurlUvSocket *i = cu->sockets; i; i = i->next)
                        if (i->fd == fd && !uv_is_closing((uv_handle_t *)&i->poll) &&
                            !uv_is_active((uv_handle_t *)&i->poll) && i->events != 0)
                                (void)uv_poll_start(&i->poll, i->events, curl_uv_on_poll);
        curl_uv_collect(cu);
        curl_uv_reap_broken(cu);
}

static void curl_uv_on_timeout(uv_timer_t *timer) {
        CurlUv *cu = timer->data;
        int n_running;

        (void)curl_multi_socket_action(cu->multi, CURL_SOCKET_TIMEOUT, 0, &n_running);
        curl_uv_collect(cu);
        curl_uv_reap_broken(cu);
}

/* Never -1 from the socket function: libcurl then marks the whole multi handle dead, and every
 * later transfer would fail. The one transfer is failed by curl_uv_reap_broken() instead. */
static int curl_uv_socket_failed(CURL *easy, int r) {
        char *private = NULL;

        (void)curl_easy_getinfo(easy, CURLINFO_PRIVATE, &private);
        if (private && ((CurlUvTransfer *)(void *)private)->socket_error == 0)
                ((CurlUvTransfer *)(void *)private)->socket_error = r;
        return 0;
}

/* CURLMOPT_SOCKETFUNCTION: called from inside curl; only (re)arms or closes polls. */
static int curl_uv_on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        CurlUv *cu = userp;
        CurlUvSocket *s = socketp;
        int events = 0, r;

        if (what == CURL_POLL_REMOVE) {
                if (s) {
                        (void)curl_multi_assign(cu->multi, fd, NULL);
                        curl_uv_socket_close(s);
                }
                return 0;
        }

        if (!s) {
                s = calloc(1, sizeof(*s));
                if (!s)
                        return curl_uv_socket_failed(easy, -ENOMEM);
                r = uv_poll_init_socket(cu->loop, &s->poll, fd);
                if (r < 0) {
                        free(s);
                        return curl_uv_socket_failed(easy, r);
                }
                s->poll.data = s;
                s->owner = cu;
                s->fd = fd;
                s->next = cu->sockets;
                if (cu->sockets)
                        cu->sockets->prev = s;
                cu->sockets = s;
                cu->n_open_handles++;
                if (curl_multi_assign(cu->multi, fd, s) != CURLM_OK) {
                        curl_uv_socket_close(s);
                        return curl_uv_socket_failed(easy, -ENOMEM);
                }
        }

        if (what & CURL_POLL_IN)
                events |= UV_READABLE;
        if (what & CURL_POLL_OUT)
                events |= UV_WRITABLE;
        s->events = events;
        r = uv_poll_start(&s->poll, events, curl_uv_on_poll);
        if (r < 0)
                return curl_uv_socket_failed(easy, r);
        return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl must not be re-entered from here, so even a 0 ms timeout
 * goes through the loop. */
static int curl_uv_on_timer_request(CURLM *multi, long timeout_ms, void *userp) {
        CurlUv *cu = userp;

        /* uv_timer_start() only fails on a closing handle, which is_closing rules out; -1
         * would kill the multi handle anyway. */
        if (cu->is_closing)
                return 0;
        if (timeout_ms < 0)
                (void)uv_timer_stop(&cu->timer);
        else
                (void)uv_timer_start(&cu->timer, curl_uv_on_timeout, (uint64_t)timeout_ms, 0);
        return 0;
}

static size_t curl_uv_on_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        CurlUvTransfer *t = userdata;
        size_t n;
        int r;

        /* curl documents size as always 1; the product cannot overflow then. */
        if (__builtin_mul_overflow(size, nmemb, &n)) {
                t->body_error = -E2BIG;
                return 0;
        }
        /* The body buffer may hold an error document past the request's limit; a successful
         * answer gets the request's limit. */
        if (n > t->max_body - t->body.len || t->body.len > t->max_body) {
                long http_status = 0;

                (void)curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &http_status);
                if (http_status >= 200 && http_status < 300) {
                        t->body_error = -E2BIG;
                        return 0;
                }
        }
        r = buf_append(&t->body, ptr, n);
        if (r < 0) {
                t->body_error = r;
                return 0; /* not n: curl aborts the transfer with CURLE_WRITE_ERROR */
        }
        return n;
}

static int curl_uv_on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip,
                             int conn_primary_port, int conn_local_port) {
        CurlUvTransfer *t = clientp;

        t->n_sends++;
        return CURL_PREREQFUNC_OK;
}

#define EASY_SETOPT(easy, option, value)                                                           \
        do {                                                                                       \
                CURLcode _code = curl_easy_setopt((easy), (option), (value));                      \
                if (_code != CURLE_OK)                                                             \
                        return curl_code_to_errno(_code);                                          \
        } while (0)

typedef enum CurlUvMethod {
        CURL_UV_GET,
        CURL_UV_HEAD,
        CURL_UV_POST,
        CURL_UV_PUT,
        CURL_UV_DELETE,
} CurlUvMethod;

static int curl_uv_method_parse(const char *method) {
        static const char *const names[] = {
                [CURL_UV_GET] = "GET", [CURL_UV_HEAD] = "HEAD",     [CURL_UV_POST] = "POST",
                [CURL_UV_PUT] = "PUT", [CURL_UV_DELETE] = "DELETE",
        };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(method, names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

static int curl_uv_transfer_setup(CurlUvTransfer *t, const CurlUvRequest *req,
                                  CurlUvMethod method) {
        CurlUv *cu = t->owner;
        CURL *easy = t->easy;

        EASY_SETOPT(easy, CURLOPT_PRIVATE, (void *)t);
        EASY_SETOPT(easy, CURLOPT_URL, req->url);
        /* Only plain HTTP(S), and never a redirect: a 307 on a commit must not be replayed
         * somewhere else behind our back. */
        EASY_SETOPT(easy, CURLOPT_PROTOCOLS_STR, "http,https");
        EASY_SETOPT(easy, CURLOPT_FOLLOWLOCATION, 0L);
        EASY_SETOPT(easy, CURLOPT_NOSIGNAL, 1L);
        EASY_SETOPT(easy, CURLOPT_TCP_KEEPALIVE, 1L);
        EASY_SETOPT(easy, CURLOPT_CONNECTTIMEOUT_MS, cu->connect_timeout_ms);
        EASY_SETOPT(easy, CURLOPT_TIMEOUT_MS,
                    req->timeout_ms ? (long)req->timeout_ms : cu->request_timeout_ms);
        EASY_SETOPT(easy, CURLOPT_SSL_VERIFYPEER, cu->tls_verify ? 1L : 0L);
        EASY_SETOPT(easy, CURLOPT_SSL_VERIFYHOST, cu->tls_verify ? 2L : 0L);
        if (cu->ca_file)
                EASY_SETOPT(easy, CURLOPT_CAINFO, cu->ca_file);
        EASY_SETOPT(easy, CURLOPT_USERAGENT, cu->user_agent);
        /* Table metadata compresses ~10x; the limit applies to the decoded bytes. Without
         * decoding, libcurl sends no Accept-Encoding and leaves a Content-Encoding alone. */
        if (cu->decode_content)
                EASY_SETOPT(easy, CURLOPT_ACCEPT_ENCODING, "");
        EASY_SETOPT(easy, CURLOPT_HTTP_CONTENT_DECODING, cu->decode_content ? 1L : 0L);
        EASY_SETOPT(easy, CURLOPT_ERRORBUFFER, t->errbuf);
        /* A body announced larger than the larger limit (an error's may pass the request's) is
         * refused at its headers, not downloaded (not for HEAD, whose Content-Length is the
         * object's size, not a body); a 2xx body past the request's limit is refused as it
         * arrives (curl_uv_on_write). */
        if (method != CURL_UV_HEAD)
                EASY_SETOPT(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)t->body.max);
        EASY_SETOPT(easy, CURLOPT_WRITEFUNCTION, curl_uv_on_write);
        EASY_SETOPT(easy, CURLOPT_WRITEDATA, (void *)t);
        EASY_SETOPT(easy, CURLOPT_PREREQFUNCTION, curl_uv_on_prereq);
        EASY_SETOPT(easy, CURLOPT_PREREQDATA, (void *)t);
        EASY_SETOPT(easy, CURLOPT_HTTPHEADER, t->headers);
        if (req->aws_sigv4) {
                EASY_SETOPT(easy, CURLOPT_AWS_SIGV4, req->aws_sigv4);
                EASY_SETOPT(easy, CURLOPT_USERNAME, req->username ? req->username : "");
                EASY_SETOPT(easy, CURLOPT_PASSWORD, req->password ? req->password : "");
        }
        switch (method) {
        case CURL_UV_POST:
        case CURL_UV_PUT:
                /* A PUT sent as a POST with its method renamed: the body is in memory, and
                 * libcurl's SigV4 hashes POSTFIELDS, never a streamed upload (docs/design.md
                 * section 7.2). */
                EASY_SETOPT(easy, CURLOPT_POST, 1L);
                EASY_SETOPT(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body.len);
                EASY_SETOPT(easy, CURLOPT_COPYPOSTFIELDS,
                            req->body.ptr ? (const char *)req->body.ptr : "");
                if (method == CURL_UV_PUT)
                        EASY_SETOPT(easy, CURLOPT_CUSTOMREQUEST, "PUT");
                break;
        case CURL_UV_HEAD:
                EASY_SETOPT(easy, CURLOPT_NOBODY, 1L);
                break;
        case CURL_UV_DELETE:
                EASY_SETOPT(easy, CURLOPT_HTTPGET, 1L);
                EASY_SETOPT(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
                break;
        case CURL_UV_GET:
                EASY_SETOPT(easy, CURLOPT_HTTPGET, 1L);
                break;
        }
        return 0;
}

static int header_list_append(struct curl_slist **list, const char *line) {
        struct curl_slist *l;

        l = curl_slist_append(*list, line);
        if (!l)
                return -ENOMEM; /* *list is unchanged and still owned by the caller */
        *list = l;
        return 0;
}

int curl_uv_send(CurlUv *cu, const CurlUvRequest *req, CurlUvCallback cb, void *userdata) {
        _cleanup_(curl_uv_transfer_freep) CurlUvTransfer *t = NULL;
        CURLMcode mcode;
        int method, r;

        assert(cu && req && req->url && req->method && cb);
        if (cu->is_closing)
                return -ESHUTDOWN;
        method = curl_uv_method_parse(req->method);
        if (method < 0)
                return method;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->owner = cu;
        t->max_body = req->max_response_bytes == 0             ? cu->max_response_bytes
                      : req->max_response_bytes > SIZE_MAX - 1 ? SIZE_MAX - 1
                                                               : (size_t)req->max_response_bytes;
        buf_init(&t->body,
                 t->max_body > cu->max_error_body_bytes ? t->max_body : cu->max_error_body_bytes);
        t->easy = cu->n_idle > 0 ? cu->idle[--cu->n_idle] : curl_easy_init();
        if (!t->easy)
                return -ENOMEM;

        for (size_t i = 0; i < req->n_headers; i++) {
                r = header_list_append(&t->headers, req->headers[i]);
                if (r < 0)
                        return r;
        }
        if ((method == CURL_UV_POST || method == CURL_UV_PUT) && !req->aws_sigv4) {
                /* curl would send "Expect: 100-continue" for larger bodies and wait up to a
                 * second for the interim answer; catalogs accept the body right away. Not with
                 * SigV4: libcurl 7.88 signs the empty "expect:" it then does not send, and the
                 * store refuses the signature (measured with SeaweedFS); object stores answer
                 * the 100 at once anyway. */
                r = header_list_append(&t->headers, "Expect:");
                if (r < 0)
                        return r;
        }
        r = curl_uv_transfer_setup(t, req, (CurlUvMethod)method);
        if (r < 0)
                return r;

        t->cb = cb;
        t->userdata = userdata;
        mcode = curl_multi_add_handle(cu->multi, t->easy);
        if (mcode != CURLM_OK)
                return curl_mcode_to_errno(mcode);
        transfer_list_append(&cu->transfers, TAKE_PTR(t));
        return 0;
}

static void curl_uv_on_timer_closed(uv_handle_t *handle) {
        CurlUv *cu = handle->data;
        CurlUvTransfer *t;

        /* Reported from a close callback, never from inside curl_uv_close(): callers may be
         * walking their own lists when they close us. */
        while ((t = cu->cancelled)) {
                CurlUvResponse response = {
                        .status = -ECANCELED,
                        .error = "cancelled: the catalog client is closing",
                };

                transfer_list_remove(&cu->cancelled, t);
                t->cb(&response, t->userdata);
                curl_uv_transfer_free(t);
        }
        assert(cu->n_open_handles > 0);
        cu->n_open_handles--;
        curl_uv_maybe_free(cu);
}

void curl_uv_close(CurlUv *cu, void (*done)(void *userdata), void *userdata) {
        CurlUvTransfer *t;

        assert(cu && !cu->is_closing);
        cu->is_closing = true;
        cu->close_done = done;
        cu->close_userdata = userdata;

        while ((t = cu->transfers)) {
                /* May call the socket function with CURL_POLL_REMOVE: closes those polls. */
                (void)curl_multi_remove_handle(cu->multi, t->easy);
                transfer_list_remove(&cu->transfers, t);
                transfer_list_append(&cu->cancelled, t);
        }
        (void)curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, (curl_socket_callback)NULL);
        (void)curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, (curl_multi_timer_callback)NULL);
        /* Polls left are sockets curl still holds (idle connections being watched): stop
         * watching now, while the fds are still open; curl_multi_cleanup() closes them later. */
        while (cu->sockets) {
                (void)curl_multi_assign(cu->multi, cu->sockets->fd, NULL);
                curl_uv_socket_close(cu->sockets);
        }
        (void)uv_timer_stop(&cu->timer);
        uv_close((uv_handle_t *)&cu->timer, curl_uv_on_timer_closed);
}

uint64_t curl_uv_connections_opened(const CurlUv *cu) {
        return cu->n_connections;
}

#define MULTI_SETOPT(multi, option, value)                                                         \
        do {                                                                                       \
                CURLMcode _code = curl_multi_setopt((multi), (option), (value));                   \
                if (_code != CURLM_OK)                                                             \
                        return curl_mcode_to_errno(_code);                                         \
        } while (0)

int curl_uv_new(uv_loop_t *loop, const CurlUvOptions *config, CurlUv **ret_curl_uv) {
        _cleanup_(curl_uv_freep) CurlUv *cu = NULL;
        int r;

        assert(loop && config && config->user_agent && ret_curl_uv);
        if (config->max_connections == 0 || config->max_response_bytes == 0)
                return -EINVAL;

        cu = calloc(1, sizeof(*cu));
        if (!cu)
                return -ENOMEM;
        cu->loop = loop;
        /* Reference counted by libcurl and thread-safe in the versions we accept (>= 7.84). */
        r = curl_code_to_errno(curl_global_init(CURL_GLOBAL_DEFAULT));
        if (r < 0)
                return r;
        cu->is_global_initialized = true;

        cu->tls_verify = config->tls_verify;
        cu->decode_content = config->decode_content;
        cu->connect_timeout_ms = (long)config->connect_timeout_ms;
        cu->request_timeout_ms = (long)config->request_timeout_ms;
        cu->max_response_bytes = config->max_response_bytes > SIZE_MAX - 1
                                         ? SIZE_MAX - 1
                                         : (size_t)config->max_response_bytes;
        cu->max_error_body_bytes = config->max_error_body_bytes ? config->max_error_body_bytes
                                                                : CURL_UV_ERROR_BODY_BYTES;
        cu->user_agent = strdup(config->user_agent);
        if (!cu->user_agent)
                return -ENOMEM;
        if (config->ca_file) {
                cu->ca_file = strdup(config->ca_file);
                if (!cu->ca_file)
                        return -ENOMEM;
        }
        cu->max_idle = config->max_connections;
        cu->idle = calloc(cu->max_idle, sizeof(*cu->idle));
        if (!cu->idle)
                return -ENOMEM;

        cu->multi = curl_multi_init();
        if (!cu->multi)
                return -ENOMEM;
        MULTI_SETOPT(cu->multi, CURLMOPT_SOCKETFUNCTION, curl_uv_on_socket);
        MULTI_SETOPT(cu->multi, CURLMOPT_SOCKETDATA, (void *)cu);
        MULTI_SETOPT(cu->multi, CURLMOPT_TIMERFUNCTION, curl_uv_on_timer_request);
        MULTI_SETOPT(cu->multi, CURLMOPT_TIMERDATA, (void *)cu);
        /* max-connections bounds the parallel connections to the catalog; extra transfers wait
         * inside curl for a free one (their request timeout keeps running). The cache keeps
         * as many alive. */
        MULTI_SETOPT(cu->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)config->max_connections);
        MULTI_SETOPT(cu->multi, CURLMOPT_MAXCONNECTS, (long)config->max_connections);

        /* The first uv handle, and nothing fails after it: a failed _new leaves no handle
         * behind that would keep uv_loop_close() from succeeding. */
        r = uv_timer_init(loop, &cu->timer);
        if (r < 0)
                return r;
        cu->timer.data = cu;
        cu->n_open_handles = 1;

        *ret_curl_uv = TAKE_PTR(cu);
        return 0;
}
