/* SPDX-License-Identifier: Apache-2.0 */
/* Random UUID strings (RFC 9562): v4 for file names, v7 (time-ordered) for Idempotency-Key. */
#pragma once

#define UUID_STRING_MAX 37

void uuid_v4_string(char out[UUID_STRING_MAX]);
void uuid_v7_string(char out[UUID_STRING_MAX]);
