/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: the thread-pool side of the filesystem catalog's calls
 * (filesystem_ops.c), which filesystem.c queues. Nothing outside catalog/ includes this. */
#pragma once

#include <uv.h>

/* The work callback of a queued FsJob (work->data): does the job's operation and fills its
 * outcome. Thread pool only; touches nothing but the job and the files. */
void filesystem_ops_work(uv_work_t *work);
