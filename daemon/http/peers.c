/* SPDX-License-Identifier: Apache-2.0 */
/* HttpPeers: one entry per client address holding connections or requests, for the
 * per-address limits (max-connections-per-address, max-requests-per-address). A fixed table of
 * chained buckets: the number of entries is bounded by max-connections, since an address
 * without a connection keeps its entry only while one of its requests is still out. */
#define LOG_MODULE "http"
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http/http-internal.h"

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* IPv4 and IPv4-mapped IPv6 are one address: a dual-stack listener sees the latter. */
static int peer_key(const struct sockaddr *addr, uint8_t ret_key[16]) {
        if (addr->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

                memcpy(ret_key, v4_mapped_prefix, sizeof(v4_mapped_prefix));
                memcpy(ret_key + 12, &in->sin_addr, 4);
                return 0;
        }
        if (addr->sa_family == AF_INET6) {
                memcpy(ret_key, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
                return 0;
        }
        return -EAFNOSUPPORT;
}

/* FNV-1a: the addresses are the client's choice only within its own prefix, and a bucket
 * chain is at most max-connections long whatever they pick. */
static size_t peer_bucket(const uint8_t key[16]) {
        uint32_t h = 2166136261u;

        for (size_t i = 0; i < 16; i++)
                h = (h ^ key[i]) * 16777619u;
        return h % HTTP_PEERS_N_BUCKETS;
}

HttpPeer *http_peers_get(HttpPeers *peers, const struct sockaddr *addr) {
        uint8_t key[16];
        HttpPeer *p;
        size_t b;

        if (peer_key(addr, key) < 0)
                return NULL;
        b = peer_bucket(key);
        for (p = peers->buckets[b]; p; p = p->next)
                if (memcmp(p->addr, key, sizeof(key)) == 0)
                        return p;

        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        memcpy(p->addr, key, sizeof(key));
        p->next = peers->buckets[b];
        peers->buckets[b] = p;
        peers->n_peers++;
        return p;
}

void http_peers_release(HttpPeers *peers, HttpPeer *peer) {
        HttpPeer **at;

        if (!peer || peer->n_conns > 0 || peer->n_requests > 0)
                return;
        for (at = &peers->buckets[peer_bucket(peer->addr)]; *at; at = &(*at)->next)
                if (*at == peer) {
                        *at = peer->next;
                        assert(peers->n_peers > 0);
                        peers->n_peers--;
                        free(peer);
                        return;
                }
        assert(!"peer not in its bucket");
}

void http_peers_deinit(HttpPeers *peers) {
        for (size_t b = 0; b < HTTP_PEERS_N_BUCKETS; b++)
                while (peers->buckets[b]) {
                        HttpPeer *p = peers->buckets[b];

                        peers->buckets[b] = p->next;
                        free(p);
                }
        peers->n_peers = 0;
}

void http_peer_format(const HttpPeer *peer, char *buf, size_t len) {
        const char *s;

        if (memcmp(peer->addr, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0)
                s = inet_ntop(AF_INET, peer->addr + 12, buf, (socklen_t)len);
        else
                s = inet_ntop(AF_INET6, peer->addr, buf, (socklen_t)len);
        if (!s && len > 0)
                (void)snprintf(buf, len, "?");
}
