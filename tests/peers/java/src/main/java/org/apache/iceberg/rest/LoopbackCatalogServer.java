// SPDX-License-Identifier: Apache-2.0
//
// Loopback-only launcher for the real Apache Iceberg REST catalog test server.
//
// It does what RESTCatalogServer (iceberg-open-api test fixtures, 1.11.0) does -- same catalog
// configuration from CATALOG_* environment variables (RCKUtils.environmentCatalogConfig), same
// defaults (JdbcCatalog, jdbc.schema-version V1), same RESTServerCatalogAdapter, RESTCatalogServlet
// and gzip handler -- with two differences:
//   * Jetty binds 127.0.0.1 only (RESTCatalogServer uses new Server(port), i.e. all interfaces);
//   * SO_REUSEPORT is not set, so a second server on a busy port fails instead of sharing it.
// It lives in package org.apache.iceberg.rest because RESTServerCatalogAdapter, RCKUtils and
// RESTCatalogServer.CatalogContext are package-private.
//
// Test additions, both inert by default:
//   * FaultInjector, a servlet Filter in front of the unmodified RESTCatalogServlet, controlled at
//     runtime through /__faults (see FaultInjector.java); with no faults queued every request
//     passes straight through (only /__faults itself, a 400 "No route" before, is taken);
//   * CATALOG_ADVERTISE_IDEMPOTENCY=<ISO-8601 duration> (e.g. PT30M) adds
//     "idempotency-key-lifetime" to GET /v1/config (the 1.11.0 server honours Idempotency-Key but
//     does not advertise it) and sets the server's own idempotency store lifetime to that value
//     (CatalogHandlers.setIdempotencyLifetimeFromIso). Unset: /v1/config is unchanged.
//
// Environment (as for RESTCatalogServer): CATALOG_URI (jdbc:sqlite:/abs/catalog.db),
// CATALOG_WAREHOUSE (/abs/wh), CATALOG_REST_PORT (default 8181), CATALOG_JDBC_STRICT__MODE, and any
// other CATALOG_* variable (prefix dropped, "__" -> "-", "_" -> ".", lower-cased).
package org.apache.iceberg.rest;

import jakarta.servlet.DispatcherType;
import java.io.File;
import java.nio.file.Files;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LoopbackCatalogServer {
  private static final Logger LOG = LoggerFactory.getLogger(LoopbackCatalogServer.class);

  /** The only address this server listens on. */
  public static final String BIND_HOST = "127.0.0.1";

  /** Environment variable: ISO-8601 idempotency-key lifetime to advertise in /v1/config. */
  public static final String ADVERTISE_IDEMPOTENCY_ENV = "CATALOG_ADVERTISE_IDEMPOTENCY";

  private Server httpServer;

  /** Same steps as RESTCatalogServer.initializeBackendCatalog() in Iceberg 1.11.0. */
  static RESTCatalogServer.CatalogContext initializeBackendCatalog() throws Exception {
    Map<String, String> catalogProperties = new HashMap<>(RCKUtils.environmentCatalogConfig());
    catalogProperties.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    catalogProperties.putIfAbsent(CatalogProperties.URI, "jdbc:sqlite::memory:");
    catalogProperties.putIfAbsent("jdbc.schema-version", "V1");

    if (catalogProperties.get(CatalogProperties.WAREHOUSE_LOCATION) == null) {
      File tmp = Files.createTempDirectory("iceberg_warehouse").toFile();
      tmp.deleteOnExit();
      String warehouse = new File(tmp, "iceberg_data").getAbsolutePath();
      catalogProperties.put(CatalogProperties.WAREHOUSE_LOCATION, warehouse);
      LOG.info("No warehouse location set. Defaulting to temp location: {}", warehouse);
    }

    String catalogName =
        PropertyUtil.propertyAsString(
            catalogProperties, RESTCatalogServer.CATALOG_NAME, RESTCatalogServer.CATALOG_NAME_DEFAULT);
    LOG.info("Creating {} catalog with properties: {}", catalogName, catalogProperties);
    Catalog catalog =
        CatalogUtil.buildIcebergCatalog(catalogName, catalogProperties, new Configuration());
    return new RESTCatalogServer.CatalogContext(catalog, catalogProperties);
  }

  public void start(boolean join) throws Exception {
    RESTCatalogServer.CatalogContext context = initializeBackendCatalog();
    String lifetime = System.getenv(ADVERTISE_IDEMPOTENCY_ENV);
    RESTCatalogAdapter adapter;
    if (lifetime == null || lifetime.isEmpty()) {
      adapter = new RESTServerCatalogAdapter(context);
    } else {
      Duration.parse(lifetime); // fail at startup on a malformed value
      CatalogHandlers.setIdempotencyLifetimeFromIso(lifetime);
      adapter = new IdempotencyAdvertisingAdapter(context, lifetime);
      LOG.info("Advertising idempotency-key-lifetime {} in /v1/config", lifetime);
    }
    RESTCatalogServlet servlet = new RESTCatalogServlet(adapter);

    ServletContextHandler servletContext =
        new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    servletContext.addServlet(new ServletHolder(servlet), "/*");
    servletContext.addFilter(
        new FilterHolder(new FaultInjector()), "/*", EnumSet.of(DispatcherType.REQUEST));
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    servletContext.insertHandler(compression);

    int port =
        PropertyUtil.propertyAsInt(
            context.configuration(),
            RESTCatalogServer.REST_PORT,
            RESTCatalogServer.REST_PORT_DEFAULT);

    httpServer = new Server();
    ServerConnector connector = new ServerConnector(httpServer);
    connector.setHost(BIND_HOST);
    connector.setPort(port);
    httpServer.addConnector(connector);
    httpServer.setHandler(servletContext);
    httpServer.setStopAtShutdown(true);
    httpServer.start();
    LOG.info("Iceberg REST catalog listening on http://{}:{}", BIND_HOST, connector.getLocalPort());

    if (join) {
      httpServer.join();
    }
  }

  public void stop() throws Exception {
    if (httpServer != null) {
      httpServer.stop();
    }
  }

  /**
   * RESTServerCatalogAdapter whose CONFIG answer also carries idempotency-key-lifetime; every
   * other route, and the rest of the CONFIG answer, come from the unmodified adapter.
   */
  static class IdempotencyAdvertisingAdapter extends RESTServerCatalogAdapter {
    private final String lifetime;

    IdempotencyAdvertisingAdapter(RESTCatalogServer.CatalogContext context, String lifetime) {
      super(context);
      this.lifetime = lifetime;
    }

    @Override
    public <T extends RESTResponse> T handleRequest(
        Route route,
        Map<String, String> vars,
        HTTPRequest httpRequest,
        Class<T> responseType,
        Consumer<Map<String, String>> responseHeaders) {
      T response = super.handleRequest(route, vars, httpRequest, responseType, responseHeaders);
      if (route == Route.CONFIG && response instanceof ConfigResponse) {
        ConfigResponse config = (ConfigResponse) response;
        return castResponse(
            responseType,
            ConfigResponse.builder()
                .withDefaults(config.defaults())
                .withOverrides(config.overrides())
                .withEndpoints(config.endpoints())
                .withIdempotencyKeyLifetime(lifetime)
                .build());
      }
      return response;
    }
  }

  public static void main(String[] args) throws Exception {
    new LoopbackCatalogServer().start(true);
  }
}
