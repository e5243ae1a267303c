/* SPDX-License-Identifier: Apache-2.0 */
/* The listener's TLS context (OpenSSL, as libh2o links it): the certificate chain and key from
 * files, TLS 1.2 at least, ALPN h2 then http/1.1 (h2o_alpn_protocols), and with a client CA file a
 * required client certificate (mutual TLS). Files are read once, at start. */
#define LOG_MODULE "http"
#include <assert.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>

#include "http/http-internal.h"

/* The TLS session id context: which service a cached session or ticket belongs to. */
#define HTTP_TLS_SESSION_CONTEXT "icecommitd"
static_assert(sizeof(HTTP_TLS_SESSION_CONTEXT) - 1 <= SSL_MAX_SID_CTX_LENGTH,
              "SSL_CTX_set_session_id_context takes it whole");

/* OpenSSL's reason for the last failure, e.g. "PEM routines::no start line". */
static const char *tls_last_error(char *buf, size_t len) {
        unsigned long e = ERR_peek_last_error();

        if (e == 0)
                return "unknown error";
        ERR_error_string_n(e, buf, len);
        ERR_clear_error();
        return buf;
}

int http_tls_new(const HttpConfig *config, SSL_CTX **ret_ctx, Error *error) {
        SSL_CTX *ctx;
        char reason[256];

        ERR_clear_error();
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx)
                return error_set(error, -ENOMEM, "cannot create a TLS context: %s",
                                 tls_last_error(reason, sizeof(reason)));
        (void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        /* No renegotiation (a client-driven CPU sink) and no compression (CRIME). */
        SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                         SSL_OP_CIPHER_SERVER_PREFERENCE);

        if (SSL_CTX_use_certificate_chain_file(ctx, config->tls_certificate_file) != 1) {
                error_set(error, -EINVAL, "http.tls-certificate-file '%s': %s",
                          config->tls_certificate_file, tls_last_error(reason, sizeof(reason)));
                goto fail;
        }
        /* Loading the key already compares it with the certificate. */
        if (SSL_CTX_use_PrivateKey_file(ctx, config->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
                if (ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
                        error_set(error, -EINVAL, "http.tls-key-file '%s': %s",
                                  config->tls_key_file, tls_last_error(reason, sizeof(reason)));
                        goto fail;
                }
                error_set(
                        error, -EINVAL,
                        "http.tls-key-file '%s' does not match http.tls-certificate-file '%s': %s",
                        config->tls_key_file, config->tls_certificate_file,
                        tls_last_error(reason, sizeof(reason)));
                goto fail;
        }
        if (config->tls_client_ca_file) {
                STACK_OF(X509_NAME) * names;

                if (SSL_CTX_load_verify_locations(ctx, config->tls_client_ca_file, NULL) != 1) {
                        error_set(error, -EINVAL, "http.tls-client-ca-file '%s': %s",
                                  config->tls_client_ca_file,
                                  tls_last_error(reason, sizeof(reason)));
                        goto fail;
                }
                /* The CA names go into the CertificateRequest, so clients pick the right one. */
                names = SSL_load_client_CA_file(config->tls_client_ca_file);
                if (names)
                        SSL_CTX_set_client_CA_list(ctx, names);
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
        /* With client certificates required, OpenSSL ends the handshake of any resumption
         * (TLS 1.2 session id or TLS 1.3 ticket) while no session id context is set
         * (SSL_R_SESSION_ID_CONTEXT_UNINITIALIZED): every client's second connection failed. A
         * resumed session skips the client certificate check and stands for the one this
         * context made. A fixed name suffices because the files are read once, into a new
         * context whose session cache and ticket keys are its own: a restart forgets every
         * session. A reload that changed the CA or certificate of a live context would have to
         * change this id with them (a digest of the CA file, say), or a client would resume a
         * session the new CA never checked. */
        (void)SSL_CTX_set_session_id_context(ctx, (const unsigned char *)HTTP_TLS_SESSION_CONTEXT,
                                             sizeof(HTTP_TLS_SESSION_CONTEXT) - 1);
        h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);

        *ret_ctx = ctx;
        return 0;

fail:
        SSL_CTX_free(ctx);
        return -EINVAL;
}
