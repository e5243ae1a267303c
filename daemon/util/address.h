/* SPDX-License-Identifier: Apache-2.0 */
/* IP address literals, as the listener takes them (http.listen-address): parsing and whether
 * an address is a loopback one. Pure: no name resolution, no sockets. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Parses an IPv4 literal in dotted-quad form or an IPv6 literal (inet_pton(3)'s forms: no host
 * names, no zone index, no brackets) into *ret with `port`. Returns 0, or -EINVAL when `text`
 * is not such a literal (*ret is untouched then). */
int address_parse(const char *text, uint16_t port, struct sockaddr_storage *ret);
/* Whether only this host can reach the address: IPv4 127.0.0.0/8, IPv6 ::1, or 127.0.0.0/8
 * mapped into IPv6 (::ffff:127.x.y.z). The wildcards 0.0.0.0 and :: are not loopback. */
bool address_is_loopback(const struct sockaddr_storage *a);
