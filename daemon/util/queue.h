/* SPDX-License-Identifier: Apache-2.0 */
/* An intrusive FIFO: the owner holds `head` and `tail` pointers, each item a `next` pointer
 * (STYLE section 4: the queue owns nothing; whoever pops an item owns it). Plain GNU C
 * statement expressions, each argument evaluated once. */
#pragma once

#include <stddef.h>

/* Appends `item` to queue `q` (a pointer to a struct with head and tail). */
#define QUEUE_PUSH(q, item)                                                                        \
        do {                                                                                       \
                __typeof__(q) _q = (q);                                                            \
                __typeof__(item) _item = (item);                                                   \
                                                                                                   \
                _item->next = NULL;                                                                \
                if (_q->tail)                                                                      \
                        _q->tail->next = _item;                                                    \
                else                                                                               \
                        _q->head = _item;                                                          \
                _q->tail = _item;                                                                  \
        } while (0)

/* Unlinks and returns the first item of `q` (its next cleared), or NULL when it is empty. */
#define QUEUE_POP(q)                                                                               \
        __extension__({                                                                            \
                __typeof__(q) _q = (q);                                                            \
                __typeof__(_q->head) _head = _q->head;                                             \
                                                                                                   \
                if (_head) {                                                                       \
                        _q->head = _head->next;                                                    \
                        if (!_q->head)                                                             \
                                _q->tail = NULL;                                                   \
                        _head->next = NULL;                                                        \
                }                                                                                  \
                _head;                                                                             \
        })
