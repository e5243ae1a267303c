/* SPDX-License-Identifier: Apache-2.0 */
/* Scope-bound cleanup (`_cleanup_`) and ownership hand-off (`TAKE_PTR`), systemd style.
 * Destructors used with DEFINE_CLEANUP_FUNC must accept NULL. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

/* Hands ownership of *p out of a cleanup-guarded variable. */
#define TAKE_PTR(p)                                                                                \
        __extension__({                                                                            \
                __typeof__(p) _ptr_ = (p);                                                         \
                (p) = NULL;                                                                        \
                _ptr_;                                                                             \
        })

#define TAKE_FD(fd)                                                                                \
        __extension__({                                                                            \
                int _fd_ = (fd);                                                                   \
                (fd) = -1;                                                                         \
                _fd_;                                                                              \
        })

/* Defines `name##p(type **)` calling `func(*p)` when *p is set. */
#define DEFINE_CLEANUP_FUNC(type, func)                                                            \
        static inline _unused_ void func##p(type **p) {                                            \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }                                                                                          \
        struct cleanup_allow_trailing_semicolon_

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline void freep(void *p) {
        free(*(void **)p);
}

static inline void closep(int *fd) {
        if (*fd >= 0)
                (void)close(*fd);
}

static inline void fclosep(FILE **f) {
        if (*f)
                (void)fclose(*f);
}
