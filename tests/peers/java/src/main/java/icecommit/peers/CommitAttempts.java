// SPDX-License-Identifier: Apache-2.0
//
// MetricsReporter that remembers how many attempts each commit of this JVM needed, so the
// "append" subcommand can show whether it lost races (each extra attempt followed a 409 or
// another retryable commit failure). Installed through the catalog property
// metrics-reporter-impl; Iceberg instantiates it with the no-arg constructor.
package icecommit.peers;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.CounterResult;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;

public final class CommitAttempts implements MetricsReporter {
  private static final Map<Long, Long> ATTEMPTS_BY_SNAPSHOT = new ConcurrentHashMap<>();

  public CommitAttempts() {}

  @Override
  public void report(MetricsReport report) {
    if (report instanceof CommitReport) {
      CommitReport commit = (CommitReport) report;
      CounterResult attempts = commit.commitMetrics().attempts();
      if (attempts != null) {
        ATTEMPTS_BY_SNAPSHOT.put(commit.snapshotId(), attempts.value());
      }
    }
  }

  /** Attempts the commit of {@code snapshotId} took, or null if it was not reported. */
  static Long attempts(long snapshotId) {
    return ATTEMPTS_BY_SNAPSHOT.get(snapshotId);
  }
}
