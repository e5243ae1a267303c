/* SPDX-License-Identifier: Apache-2.0 */
/* Owns the uv loop and every module; starts them in dependency order and stops them in reverse. */
#define LOG_MODULE "daemon"
#include <errno.h>

#include "daemon.h"
#include "util/log.h"

int daemon_run(const Config *config) {
        log_error("not implemented yet");
        return -ENOSYS;
}
