/* SPDX-License-Identifier: Apache-2.0 */
/* S3 XML answers (see s3_xml.h). The documents are small and flat; a tag is found by its exact
 * name, never by a regular expression, and every read is bounded by the slice. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3_xml.h"
#include "util/buf.h"
#include "util/cleanup.h"

/* Finds "<name>" (or "<name " with attributes) at or after *pos within [0,len); on success the
 * element's text is [*ret_start, *ret_end) and *pos moves past "</name>". */
static bool s3_xml_find(const char *s, size_t len, size_t *pos, const char *name, size_t *ret_start,
                        size_t *ret_end) {
        size_t n = strlen(name), i = *pos;

        while (i < len) {
                const char *lt = memchr(s + i, '<', len - i);
                size_t at, j;

                if (!lt)
                        return false;
                at = (size_t)(lt - s);
                if (len - at - 1 >= n + 1 && memcmp(lt + 1, name, n) == 0 &&
                    (lt[n + 1] == '>' || lt[n + 1] == ' ')) {
                        const char *gt = memchr(lt, '>', len - at);

                        if (!gt)
                                return false;
                        if (gt > lt && gt[-1] == '/') { /* <Name/>: empty */
                                *ret_start = *ret_end = (size_t)(gt - s) + 1;
                                *pos = *ret_end;
                                return true;
                        }
                        j = (size_t)(gt - s) + 1;
                        for (size_t k = j; k < len; k++) {
                                const char *close = memchr(s + k, '<', len - k);

                                if (!close)
                                        return false;
                                k = (size_t)(close - s);
                                if (len - k >= n + 3 && close[1] == '/' &&
                                    memcmp(close + 2, name, n) == 0 && close[n + 2] == '>') {
                                        *ret_start = j;
                                        *ret_end = k;
                                        *pos = k + n + 3;
                                        return true;
                                }
                        }
                        return false;
                }
                i = at + 1;
        }
        return false;
}

static int s3_xml_append_codepoint(Buf *out, uint32_t c) {
        uint8_t b[4];
        size_t n;

        if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
                return -EBADMSG;
        if (c < 0x80) {
                b[0] = (uint8_t)c;
                n = 1;
        } else if (c < 0x800) {
                b[0] = (uint8_t)(0xC0 | (c >> 6));
                b[1] = (uint8_t)(0x80 | (c & 0x3F));
                n = 2;
        } else if (c < 0x10000) {
                b[0] = (uint8_t)(0xE0 | (c >> 12));
                b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                b[2] = (uint8_t)(0x80 | (c & 0x3F));
                n = 3;
        } else {
                b[0] = (uint8_t)(0xF0 | (c >> 18));
                b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
                b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                b[3] = (uint8_t)(0x80 | (c & 0x3F));
                n = 4;
        }
        return buf_append(out, b, n);
}

/* Decodes XML text: &lt; &gt; &amp; &quot; &apos; and &#N; / &#xN;. */
static int s3_xml_decode(const char *s, size_t len, Buf *out) {
        static const struct {
                const char *name;
                char c;
        } named[] = {
                { "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' }, { "quot;", '"' }, { "apos;", '\'' }
        };
        int r = 0;

        for (size_t i = 0; i < len && r == 0;) {
                bool done = false;

                if (s[i] != '&') {
                        r = buf_append_byte(out, (uint8_t)s[i++]);
                        continue;
                }
                for (size_t k = 0; k < ELEMENTSOF(named) && !done; k++) {
                        size_t n = strlen(named[k].name);

                        if (len - i - 1 >= n && memcmp(s + i + 1, named[k].name, n) == 0) {
                                r = buf_append_byte(out, (uint8_t)named[k].c);
                                i += n + 1;
                                done = true;
                        }
                }
                if (done)
                        continue;
                if (len - i >= 4 && s[i + 1] == '#') {
                        bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
                        size_t j = i + (hex ? 3 : 2), digits = 0;
                        uint32_t c = 0;

                        for (; j < len && s[j] != ';' && digits < 8; j++, digits++) {
                                char d = s[j];
                                unsigned v;

                                if (d >= '0' && d <= '9')
                                        v = (unsigned)(d - '0');
                                else if (hex && d >= 'a' && d <= 'f')
                                        v = (unsigned)(d - 'a' + 10);
                                else if (hex && d >= 'A' && d <= 'F')
                                        v = (unsigned)(d - 'A' + 10);
                                else
                                        return -EBADMSG;
                                c = c * (hex ? 16 : 10) + v;
                        }
                        if (j >= len || s[j] != ';' || digits == 0)
                                return -EBADMSG;
                        r = s3_xml_append_codepoint(out, c);
                        i = j + 1;
                        continue;
                }
                return -EBADMSG;
        }
        return r;
}

/* Decoded text into a fixed field, control characters replaced, cut to fit. */
static void s3_xml_copy_text(const char *s, size_t start, size_t end, char *field, size_t size) {
        _cleanup_(buf_deinitp) Buf b;
        size_t n;

        buf_init(&b, 4096);
        field[0] = 0;
        if (s3_xml_decode(s + start, end - start, &b) < 0)
                return;
        n = b.len < size - 1 ? b.len : size - 1;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = b.data[i];

                field[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        }
        field[n] = 0;
}

int s3_xml_error_parse(Slice body, S3XmlError *ret) {
        const char *s = (const char *)body.ptr;
        size_t pos = 0, start, end, p;
        S3XmlError e = { 0 };

        if (!s || !s3_xml_find(s, body.len, &pos, "Error", &start, &end))
                return -EBADMSG;
        p = start;
        if (s3_xml_find(s, end, &p, "Code", &start, &end))
                s3_xml_copy_text(s, start, end, e.code, sizeof(e.code));
        pos = 0;
        if (s3_xml_find(s, body.len, &pos, "Message", &start, &end))
                s3_xml_copy_text(s, start, end, e.message, sizeof(e.message));
        pos = 0;
        if (s3_xml_find(s, body.len, &pos, "Region", &start, &end))
                s3_xml_copy_text(s, start, end, e.region, sizeof(e.region));
        if (!e.code[0])
                return -EBADMSG;
        *ret = e;
        return 0;
}

static char *s3_xml_dup_text(const char *s, size_t start, size_t end, int *ret_r) {
        _cleanup_(buf_deinitp) Buf b;
        size_t n;
        int r;

        buf_init(&b, 1 << 16);
        r = s3_xml_decode(s + start, end - start, &b);
        if (r == 0)
                r = buf_append_byte(&b, 0);
        if (r < 0) {
                *ret_r = r == -E2BIG ? -EBADMSG : r;
                return NULL;
        }
        return (char *)buf_steal(&b, &n);
}

void s3_xml_list_page_deinit(S3XmlListPage *page) {
        for (size_t i = 0; i < page->n_keys; i++)
                free(page->keys[i]);
        free(page->keys);
        free(page->next_token);
        *page = (S3XmlListPage){ 0 };
}

int s3_xml_list_parse(Slice body, size_t max_keys, S3XmlListPage *ret) {
        _cleanup_(s3_xml_list_page_deinit) S3XmlListPage page = { 0 };
        const char *s = (const char *)body.ptr;
        size_t pos = 0, start, end, doc_end;
        int r = 0;

        if (!s || !s3_xml_find(s, body.len, &pos, "ListBucketResult", &start, &end))
                return -EBADMSG;
        doc_end = end;
        pos = start;
        while (s3_xml_find(s, doc_end, &pos, "Contents", &start, &end)) {
                size_t p = start, ks, ke;
                char **grown, *key;

                if (!s3_xml_find(s, end, &p, "Key", &ks, &ke))
                        return -EBADMSG;
                if (page.n_keys >= max_keys)
                        return -E2BIG;
                key = s3_xml_dup_text(s, ks, ke, &r);
                if (!key)
                        return r;
                grown = reallocarray(page.keys, page.n_keys + 1, sizeof(*grown));
                if (!grown) {
                        free(key);
                        return -ENOMEM;
                }
                page.keys = grown;
                page.keys[page.n_keys++] = key;
        }
        pos = 0;
        if (s3_xml_find(s, doc_end, &pos, "IsTruncated", &start, &end))
                page.is_truncated = end - start == 4 && memcmp(s + start, "true", 4) == 0;
        pos = 0;
        if (page.is_truncated) {
                if (!s3_xml_find(s, doc_end, &pos, "NextContinuationToken", &start, &end) ||
                    end == start)
                        return -EBADMSG;
                page.next_token = s3_xml_dup_text(s, start, end, &r);
                if (!page.next_token)
                        return r;
        }
        *ret = page;
        page = (S3XmlListPage){ 0 };
        return 0;
}
