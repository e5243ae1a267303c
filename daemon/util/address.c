/* SPDX-License-Identifier: Apache-2.0 */
/* IP address literals (address.h). The config check and the listener parse with the same
 * function, so that what the check calls loopback is what the listener binds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "util/address.h"

int address_parse(const char *text, uint16_t port, struct sockaddr_storage *ret) {
        struct sockaddr_storage addr = { 0 };
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&addr;
        struct sockaddr_in *in = (struct sockaddr_in *)&addr;

        if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                in->sin_port = htons(port);
        } else if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
        } else
                return -EINVAL;
        *ret = addr;
        return 0;
}

bool address_is_loopback(const struct sockaddr_storage *a) {
        if (a->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
        if (a->ss_family == AF_INET6) {
                const struct in6_addr *in6 = &((const struct sockaddr_in6 *)a)->sin6_addr;

                /* An AF_INET6 socket bound to ::ffff:127.0.0.1 takes IPv4 connections to
                 * 127.0.0.1 only (RFC 4291 section 2.5.5.2). */
                return IN6_IS_ADDR_LOOPBACK(in6) ||
                       (IN6_IS_ADDR_V4MAPPED(in6) && in6->s6_addr[12] == 127);
        }
        return false;
}
