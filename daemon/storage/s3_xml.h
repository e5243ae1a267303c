/* SPDX-License-Identifier: Apache-2.0 */
/* The few S3 XML answers icecommitd reads: an error document and a ListObjectsV2 page. Pure,
 * bounded, and fed untrusted bytes (tests/fuzz/fuzz-s3-response.c): a flat tag scanner, no DTDs,
 * no entities beyond XML's five and numeric references (SeaweedFS writes &#34; in ETags). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/slice.h"

typedef struct S3XmlError {
        char code[128]; /* e.g. "AccessDenied", "" when absent */
        char message[512];
        char region[64]; /* <Region> of an AuthorizationHeaderMalformed/PermanentRedirect */
} S3XmlError;

/* Reads <Error><Code>…</Code><Message>…</Message></Error>. Returns 0 or -EBADMSG (not one);
 * text is decoded, control characters replaced, cut at the field sizes. */
int s3_xml_error_parse(Slice body, S3XmlError *ret);

typedef struct S3XmlListPage {
        char **keys; /* owned, decoded */
        size_t n_keys;
        bool is_truncated;
        char *next_token; /* NextContinuationToken, owned, NULL when none */
} S3XmlListPage;

/* Reads a ListBucketResult. Returns 0, -EBADMSG or -ENOMEM; at most max_keys keys (-E2BIG
 * beyond). */
int s3_xml_list_parse(Slice body, size_t max_keys, S3XmlListPage *ret);
void s3_xml_list_page_deinit(S3XmlListPage *page);
